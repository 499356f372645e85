"""The newest manifest's copy beside the hint, so a cold search starts in its first round trip
(decision 4401).

A cold reader needs the newest manifest before it can read anything the manifest names: the
hint (`_latest.json`, a version number), then that version's manifest and whether a newer one
exists, side by side: two round trips before the first shard byte. A writer therefore leaves a
copy of the manifest it commits at `manifest/_head.json`, and a cold reader GETs it beside the
hint (`cold_newest`): with the copy in hand it can start the shards' reads at once, while the
copy's version is read (the same bytes: stored, and not collected, deleted or damaged since)
beside a HEAD of the next one, which together say whether the copy is the newest. A reader
that can redo its work (search) answers only once they have said so (`Lake.snapshot_ahead`);
the others wait for them as they waited for the manifest's GET. Nothing is answered from a
manifest that is not the newest one.

Since the reader checks the copy against the stored manifest, a writer puts the copy beside
its manifest's put (`start_copy`), not after it: a copy ahead of its manifest, or of one that
lost its race, only sends a reader down the hint's path. The hint goes after the manifest
(a hint never names a version that is not stored: a missing hinted version means a deleted
manifest, decision 2701); on a store where a request is a round trip (S3: `remote`) and with
the copy stored, the writer does not wait for it (`put_hint`): a reader needs the hint only
where the copy does not settle it. So a warm write on S3 answers in two round trips after its
objects' round, not three. On local disk the hint is waited for (~0.1 ms): what a write
stored is all there when it answers.

The copy is best effort like the hint: a writer that stopped between its manifest and the
copy, two writers' copies landing out of order, a manifest bigger than HEAD_MOST (an empty
copy is written instead), or a copy older than the hint leave the reader on the hint's path.
The copy holds what the manifest holds (object keys and the search state, no episode text),
and is checked as a manifest is (its seal, its tenant).
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

from memlake.errors import MemlakeError
from memlake.lake import keys, manifest_log
from memlake.lake.manifest import Manifest
from memlake.pools import STORE_IO, LazyPool
from memlake.store.base import ObjectNotFound, ObjectStore

#: the largest manifest copied: a cold reader downloads the copy in its first round, and a
#: writer puts it beside the hint (~11 ms at 90 MB/s for the largest; 100k x 20 compacted into
#: 256 KiB parts has a 228 KB manifest)
HEAD_MOST = 1 << 20


def head_key(tenant: str) -> str:
    return keys.object_key(tenant, keys.MANIFEST_DIR, keys.HEAD_NAME)


def start_copy(store: ObjectStore, tenant: str, manifest: Manifest) -> Future[bool]:
    """Start putting `manifest`'s copy (beside the manifest's own put). Its result: whether
    the copy holds it (False: past HEAD_MOST, an empty copy written instead, or the put
    failed); it never raises."""
    data = manifest.to_bytes()
    return STORE_IO.get().submit(_put_copy, store, tenant, data if len(data) <= HEAD_MOST else b"")


def _put_copy(store: ObjectStore, tenant: str, data: bytes) -> bool:
    try:
        store.put(head_key(tenant), data)
    except MemlakeError:
        return False  # an old copy stays: its reader finds a newer version exists
    return bool(data)


def put_hint(store: ObjectStore, tenant: str, version: int, wait: bool) -> Future[None] | None:
    """Put the hint naming `version` (stored already); best effort. `wait` False: return at
    once with the put under way (the copy settles a cold reader meanwhile)."""
    if not wait:
        return STORE_IO.get().submit(_put_hint, store, tenant, version)
    _put_hint(store, tenant, version)
    return None


def _put_hint(store: ObjectStore, tenant: str, version: int) -> None:
    try:
        store.put(keys.hint_key(tenant), str(version).encode())
    except MemlakeError:
        pass  # the hint is an optimisation; readers probe forward from any older value


@dataclass(frozen=True)
class ColdRead:
    """A cold reader's newest manifest: settled from the hint's path (no `checks`), or the
    writer's copy with the HEADs that say whether it still is the newest (its version exists
    and the next does not) started. `manifest` None: neither settled it (the caller probes)."""

    manifest: Manifest | None
    checks: tuple[Future[bool], Future[bool]] | None = None

    def newest(self) -> bool:
        """Whether `manifest` is the newest (waits for the checks)."""
        if self.checks is None:
            return True
        this, after = self.checks
        try:
            return bool(this.result()) and not after.result()
        except MemlakeError:
            return False  # the store failed: the caller's own path meets it and says so


def cold_newest(store: ObjectStore, tenant: str) -> ColdRead:
    """The hint and the copy in one round trip; then either the copy with its checks started
    (not waited for), or the hint's path (manifest_log.newest_from_hint)."""
    copy = _PROBES.get().submit(_read_copy, store, tenant)
    hinted = manifest_log.read_hint(store, tenant)
    manifest, data = copy.result()
    if manifest is not None and manifest.version >= hinted:
        pool, version = _PROBES.get(), manifest.version
        this = pool.submit(_stored_as, store, keys.manifest_key(tenant, version), data)
        after = pool.submit(store.exists, keys.manifest_key(tenant, version + 1))
        return ColdRead(manifest, (this, after))
    return ColdRead(manifest_log.newest_from_hint(store, tenant, hinted))


def _stored_as(store: ObjectStore, key: str, data: bytes) -> bool:
    """Whether the manifest at `key` is these bytes: not collected, deleted or damaged since
    (a damaged newest manifest is the hint's path's to report, with writes refused)."""
    try:
        return store.get(key) == data
    except ObjectNotFound:
        return False


def _read_copy(store: ObjectStore, tenant: str) -> tuple[Manifest | None, bytes]:
    try:
        data = store.get(head_key(tenant))
    except (ObjectNotFound, MemlakeError):
        return None, b""  # no copy (written before it), or the store failed: the hint's path
    if not data:
        return None, data
    try:
        manifest = Manifest.from_bytes(data)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None, data  # a damaged copy: the hint's path reads the manifest itself
    ok = manifest.tenant == tenant and manifest.version >= 1
    return (manifest, data) if ok else (None, data)


_PROBES = LazyPool(4, "memlake-head")
