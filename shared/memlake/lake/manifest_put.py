"""The commit point: a manifest put create-exclusive that knows its own write (decision 4701).

On S3 a conditional put can succeed while its answer is lost (a reset or a timeout after S3
stored the object). botocore retries it, and the retry gets 412 PreconditionFailed for our own
object; a commit that took every 412 for another writer's win ran its change again onto its
own version (a thread message appended twice), and one that took the lost answer for a
failure told the caller that a stored write failed.

So every manifest carries a commit id (Manifest.extra[COMMIT_KEY], "<version>:<random>": an
id copied forward by a writer that does not know the key never names the next version), and
after a 412 or an error the put reads the version back: its own id means the commit landed;
another id means another writer won (PreconditionFailed, the caller's lost race); no object
means nothing landed, and the put is tried again with backoff and jitter, a few times, before
the error counts.
"""

from __future__ import annotations

import random
import secrets
import time
from dataclasses import replace

from memlake.errors import MemlakeError, StorageError, Unavailable
from memlake.lake.manifest import Manifest
from memlake.store.base import ObjectNotFound, ObjectStore, PreconditionFailed

#: Manifest.extra: the id of the commit that wrote the manifest
COMMIT_KEY = "commit"
#: tries of the put (and of reading a version back) before its error counts
ATTEMPTS = 4
#: backoff before try n (0-based): uniform in [0, BASE * 2**n], S3's "full jitter"
BASE_DELAY = 0.1


def stamped(manifest: Manifest) -> Manifest:
    """The manifest with a new commit id of its own version."""
    commit = f"{manifest.version}:{secrets.token_hex(8)}"
    return replace(manifest, extra={**manifest.extra, COMMIT_KEY: commit})


def put_manifest(store: ObjectStore, key: str, manifest: Manifest) -> None:
    """Store a `stamped` manifest at `key` unless a manifest is there. Returns when this
    manifest is stored (also when the store's answer to the put was lost); raises
    PreconditionFailed when another writer's manifest holds the key, and the store's error
    when the put kept failing and nothing landed."""
    ours = manifest.extra[COMMIT_KEY]
    data = manifest.to_bytes()
    failed: StorageError | None = None
    for attempt in range(ATTEMPTS):
        if attempt:
            time.sleep(random.uniform(0, BASE_DELAY * 2**attempt))
        try:
            store.put(key, data, if_absent=True)
            return
        except PreconditionFailed:
            if _holder(store, key) == ours:
                return  # our own put, answered the first time by a lost answer
            raise
        except StorageError as e:
            if not (e.retryable and e.transient):
                raise
            failed = e
        holder = _holder(store, key)  # the put failed: did it land before the error?
        if holder == ours:
            return
        if holder is not None:
            raise PreconditionFailed(f"{key} already exists") from failed
    assert failed is not None
    raise failed


def _holder(store: ObjectStore, key: str) -> str | None:
    """The commit id of the manifest at `key` ("" for one without), None when there is none."""
    failed: MemlakeError | None = None
    for attempt in range(ATTEMPTS):
        if attempt:
            time.sleep(random.uniform(0, BASE_DELAY * 2**attempt))
        try:
            data = store.get(key)
        except ObjectNotFound:
            return None
        except StorageError as e:
            if not (e.retryable and e.transient):
                raise
            failed = e
            continue
        try:
            return str(Manifest.from_bytes(data).extra.get(COMMIT_KEY, ""))
        except (ValueError, KeyError, TypeError):
            return ""  # not ours: ours was written whole (readers report the damage)
    raise Unavailable(
        f"could not tell whether the commit of {key} landed: {failed}",
        hint="Read the memory back before retrying: the write may have been stored.",
    )
