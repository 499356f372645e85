"""What the commit engine (memlake.lake.engine) obeys and keeps: its retry policy, the fault
hooks tests inject, a change waiting in a tenant's group-commit queue, and per-tenant state."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from memlake.errors import StorageError, Unavailable
from memlake.lake.references import References
from memlake.lake.snapshot import Snapshot, TableView
from memlake.lake.txn import Transaction


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 30
    base_delay: float = 0.005
    max_delay: float = 0.5

    def delay(self, attempt: int) -> float:
        return random.uniform(0, min(self.max_delay, self.base_delay * (2**attempt)))


@dataclass
class Hooks:
    """Fault injection for tests: called after segments are written, before the manifest."""

    before_manifest_put: Callable[[str, int], None] | None = None


@dataclass
class PendingChange:
    fn: Callable[[Transaction], Any]
    result: Any = None
    error: BaseException | None = None
    done: bool = False

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


@dataclass
class TenantState:
    snapshot: Snapshot | None = None
    commit_lock: threading.Lock = field(default_factory=threading.Lock)
    queue_lock: threading.Lock = field(default_factory=threading.Lock)
    queue: list[PendingChange] = field(default_factory=list)
    read_lock: threading.Lock = field(default_factory=threading.Lock)
    validated_at: float = 0.0
    #: newest built index per table, reused by later snapshots (see lake/snapshot.py)
    views: dict[str, TableView] = field(default_factory=dict)
    #: the hint's put a commit left under way (memlake.lake.head_copy.put_hint)
    hint_put: Future[None] | None = None
    #: what the retained manifests name, folded in across GC passes (memlake.lake.gc)
    references: References = field(default_factory=References)


#: attempts of one commit the store may fail (a retryable StorageError: 503 SlowDown, a reset)
#: before it answers; each attempt writes new objects, and none is named until its manifest.
#: 8 writers on one tenant with puts throttled past 120 a second (test_throttled_writers.py):
#: 3 answered 16% of the writes `unavailable`, 4 6%, 5 2%; 5 waits at most 6 s in all
STORE_FAILURES = 5
#: full-jitter backoff after the n-th of them: uniform in [0, STORE_BACKOFF * 2**n] seconds
STORE_BACKOFF = 0.2


def store_spent(e: StorageError, failures: int) -> Unavailable:
    """The error a commit answers once the store failed it STORE_FAILURES times."""
    return Unavailable(
        f"the object store failed this write {failures} times ({e.message}); nothing was written",
        hint="Retry the call in a few seconds: the store is throttling or briefly unreachable.",
    )
