"""Store faults inside maintenance: a step tried again after a transient failure.

An erasure pass makes hundreds of requests (every segment and shard it rewrites, the
history's listing and deletes); in the soak, with 1% of requests failing, 15 of ~40 passes
failed on one of them and started over next time with more to do, and compaction and GC
failed whole passes the same way. Each step is safe to repeat: a read reads again, a rewrite
writes a new object under a new key (the one whose answer was lost is an orphan GC
collects), a swap or compaction whose manifest landed finds nothing left to do, GC deletes
what is still there.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from memlake.errors import CorruptObject, StorageError

T = TypeVar("T")
#: tries of one step
ATTEMPTS = 4


def retried(step: Callable[[], T]) -> T:
    """`step()`, tried again (jittered, 20-160 ms) after a transient store failure."""
    for attempt in range(ATTEMPTS):
        try:
            return step()
        except CorruptObject:
            raise  # damage: trying again reads the same bytes
        except StorageError as e:
            if not (e.retryable and e.transient) or attempt == ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0, 0.02 * 2**attempt))
    raise AssertionError("unreachable")
