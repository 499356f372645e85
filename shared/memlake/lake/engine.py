"""The commit engine: optimistic, conditional manifest commits with group commit.

Write path of one commit: one segment object per touched table, then the manifest
`manifest/<version+1>.json` with If-None-Match (create-exclusive locally) beside its copy for
cold readers, then the best-effort `_latest.json` hint (memlake.lake.head_copy). Losing the race
(412/409) means re-reading the newest manifest, re-running the change functions against it (they
re-validate), and retrying with jittered exponential backoff. Writers in one process queue up
and the one holding the commit lock commits everyone's changes in a single manifest version
(group commit), so a storm of writers makes few manifest writes instead of a stampede of
conditional PUTs.

Readers find the newest version from the cached version (or the hint) by probing forward
(memlake.lake.manifest_log): a warm reader spends one request (does version+1 exist?).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import TypeVar

import pyarrow as pa

from memlake.errors import CorruptObject, StorageError, Unavailable
from memlake.lake import head_copy, keys
from memlake.lake.checksums import CHECK_HINT
from memlake.lake.commit_state import (
    STORE_BACKOFF,
    STORE_FAILURES,
    Hooks,
    PendingChange,
    RetryPolicy,
    TenantState,
    store_spent,
)
from memlake.lake.manifest import Manifest, SegmentRef
from memlake.lake.manifest_put import put_manifest, stamped
from memlake.lake.reading import HINT_RECHECK_SECONDS, Reading
from memlake.lake.schema import DEFAULT_DIM, Catalog, TableSpec, rows_to_table
from memlake.lake.segments import SegmentCache, encode_segment
from memlake.lake.snapshot import Snapshot
from memlake.lake.txn import Transaction
from memlake.pools import STORE_IO
from memlake.store.base import ObjectStore, PreconditionFailed

T = TypeVar("T")

log = logging.getLogger("memlake.lake")


@dataclass(frozen=True)
class CommitContext:
    """What a commit hook sees: the snapshot committed onto, the staged changes, and the
    segment lists the new manifest will hold (staged rows already written as segments)."""

    lake: Lake
    tenant: str
    snapshot: Snapshot
    txn: Transaction
    tables: dict[str, tuple[SegmentRef, ...]]
    version: int


#: A hook runs inside every commit attempt after the segments are written and before the
#: manifest is put. It may write derived immutable objects (index shards) and record them in
#: ctx.txn.extra; raising aborts the attempt (nothing becomes visible).
CommitHook = Callable[[CommitContext], None]
#: A prepare hook runs inside every commit attempt before any segment is written: it may stage
#: derived rows into the transaction (e.g. embeddings of staged episodes) so they commit with
#: them. It re-runs on a lost race, against the newer snapshot, like the change functions.
PrepareHook = Callable[[Snapshot, Transaction], None]
#: A published hook runs once a commit's snapshot is installed, with the snapshot it replaced
#: (prev, new): it lets caches go of what the new one no longer names. The write has landed,
#: so it must not raise (an error would answer a landed write as failed).
PublishedHook = Callable[[Snapshot, Snapshot], None]


class Lake(Reading):
    def __init__(
        self,
        store: ObjectStore,
        *,
        tables: Catalog,
        dim: int = DEFAULT_DIM,
        cache_bytes: int = 1 << 30,
        retry: RetryPolicy | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        self.store = store
        #: the tables this lake reads and writes (memlake.features assembles them)
        self.tables = tables
        self.dim = dim
        self.cache = SegmentCache(cache_bytes)
        self.retry = retry or RetryPolicy()
        self.hooks = hooks or Hooks()
        self._tenants: dict[str, TenantState] = {}
        self._tenants_lock = threading.Lock()
        self.commit_hooks: list[CommitHook] = []
        self.prepare_hooks: list[PrepareHook] = []
        self.published_hooks: list[PublishedHook] = []

    def spec(self, name: str) -> TableSpec:
        try:
            return self.tables[name]
        except KeyError:
            raise ValueError(f"unknown table {name!r}") from None

    def schema(self, name: str) -> pa.Schema:
        return self.spec(name).schema(self.dim)

    def _state(self, tenant: str) -> TenantState:
        keys.tenant_prefix(tenant)  # validates
        with self._tenants_lock:
            st = self._tenants.get(tenant)
            if st is None:
                st = self._tenants[tenant] = TenantState()
            return st

    def known_tenants(self) -> list[str]:
        """Tenants this process has read or written (maintenance works through these)."""
        with self._tenants_lock:
            return list(self._tenants)

    def settle_hint(self, tenant: str) -> None:
        """Wait for the hint's put a commit of this tenant left under way (benches count a
        write's requests; a commit waits for the one before it)."""
        put, self._state(tenant).hint_put = self._state(tenant).hint_put, None
        if put is not None:
            put.result()

    # writing ---------------------------------------------------------------------------
    def commit(self, tenant: str, fn: Callable[[Transaction], T]) -> T:
        """Run fn against the newest snapshot and commit what it stages; returns fn's result.

        fn may run more than once (after a lost race) and must only read and stage through
        the transaction. A MemlakeError raised by fn rejects this change alone.
        """
        st = self._state(tenant)
        pending = PendingChange(fn)
        with st.queue_lock:
            st.queue.append(pending)
        with st.commit_lock:
            if not pending.done:
                with st.queue_lock:
                    batch, st.queue = st.queue, []
                self._commit_batch(tenant, st, batch)
        return pending.outcome()  # type: ignore[no-any-return]

    def _commit_batch(self, tenant: str, st: TenantState, batch: list[PendingChange]) -> None:
        failures = 0  # attempts the store failed (503 SlowDown, a reset): tried again a few times
        try:
            for attempt in range(self.retry.attempts):
                snap, newer = self._commit_snapshot(tenant, st, first=attempt == 0)
                refuse_writes_onto(snap)
                txn = Transaction(snap)
                for p in batch:
                    child = txn.child()
                    try:
                        p.result, p.error = p.fn(child), None
                        child.merge_into_parent()
                    except Exception as e:  # rejects this change alone
                        p.result, p.error = None, e
                settled = not txn.has_changes() or any(p.error is not None for p in batch)
                if newer is not None and settled:  # a verdict on an old snapshot does not count
                    if newer.result():
                        continue  # validated again on the newest (no wait: no contention seen)
                    newer = None
                if not txn.has_changes():
                    return
                try:
                    manifest, copied = self._write(tenant, snap, txn)
                except PreconditionFailed:
                    time.sleep(self.retry.delay(attempt))
                    continue
                except StorageError as e:  # nothing of this attempt is named by a manifest
                    failures += 1
                    if not (e.retryable and e.transient):
                        raise
                    if failures >= STORE_FAILURES:
                        raise store_spent(e, failures) from e
                    time.sleep(random.uniform(0, STORE_BACKOFF * 2**failures))
                    continue
                self._publish(tenant, st, snap, manifest, copied)
                return
            for p in batch:
                p.result, p.error = (
                    None,
                    Unavailable(
                        "the memory store is busy with concurrent writes; nothing was written",
                        hint="Retry the call in a moment.",
                    ),
                )
        except Exception as e:  # storage failure or injected crash: nobody is acknowledged
            for p in batch:
                p.result, p.error = None, e
        finally:
            for p in batch:
                p.done = True

    def _write(self, tenant: str, snap: Snapshot, txn: Transaction) -> tuple[Manifest, bool]:
        """One attempt: the segments put side by side with what the commit hooks write (no
        manifest names any of them yet), then the manifest, create-exclusive, once every one
        of them is stored: onto a snapshot a newer version has passed, it loses the race."""
        version = snap.version + 1
        for prepare in self.prepare_hooks:
            prepare(snap, txn)
        tables = dict(snap.manifest.tables)
        puts: list[Future[None]] = []
        for name in sorted(txn.staged):
            rows = txn.rows_for_segment(name)
            if not rows:
                continue
            spec = self.spec(name)
            # _seq is known per attempt (a retry writes new segments), so every Parquet row
            # carries its version and readers outside memlake (DuckDB, Athena) can order rows
            arrow = rows_to_table([{**r, "_seq": version} for r in rows], spec.schema(self.dim))
            ref, data = encode_segment(tenant, name, arrow, spec.stat_columns)
            puts.append(STORE_IO.get().submit(self.store.put, ref.key, data, if_absent=True))
            self.cache.add(ref.key, arrow)
            tables[name] = tables.get(name, ()) + (replace(ref, seq=version),)
        try:
            for hook in self.commit_hooks:
                hook(CommitContext(self, tenant, snap, txn, tables, version))
        finally:
            for put in puts:  # every segment stored (or its error raised) before going on
                put.result()
        extra = txn.extra if txn.has_changes() else snap.extra
        manifest = stamped(snap.manifest.next(tables, extra))
        if self.hooks.before_manifest_put is not None:
            self.hooks.before_manifest_put(tenant, version)
        return manifest, self._put_manifest(tenant, manifest)

    def _put_manifest(self, tenant: str, manifest: Manifest) -> bool:
        """The commit point, with the manifest's copy put beside it (head_copy: a reader
        checks the copy against the stored manifest). Whether the copy holds it; the copy's
        put is over either way, so an attempt's copy never lands after the next attempt's."""
        copy = head_copy.start_copy(self.store, tenant, manifest)
        try:
            put_manifest(self.store, keys.manifest_key(tenant, manifest.version), manifest)
        finally:
            copied = copy.result()
        return copied

    def _commit_snapshot(
        self, tenant: str, st: TenantState, first: bool
    ) -> tuple[Snapshot, Future[bool] | None]:
        """The snapshot an attempt commits onto. A first attempt of a process that read the
        tenant lately takes the one it holds and asks whether a newer version exists beside
        its work (a round trip less): onto an old snapshot its manifest put loses the race,
        and a change it rejected there is validated again on the newest (`_commit_batch`); a
        retry probes first, as a reader does."""
        current = st.snapshot
        fresh = time.monotonic() - st.validated_at <= HINT_RECHECK_SECONDS
        if not first or current is None or current.damage is not None or not fresh:
            return self.snapshot(tenant), None
        next_key = keys.manifest_key(tenant, current.version + 1)
        return current, STORE_IO.get().submit(self.store.exists, next_key)

    def _publish(
        self, tenant: str, st: TenantState, prev: Snapshot, manifest: Manifest, copied: bool
    ) -> None:
        """After the manifest is stored: the hint (on a remote store not waited for when the
        copy holds the manifest: it settles cold readers; the previous hint's put ends first,
        so hints land in order), and the new snapshot installed."""
        self.settle_hint(tenant)
        wait = not copied or not getattr(self.store, "remote", False)  # local: ~0.1 ms, waited
        st.hint_put = head_copy.put_hint(self.store, tenant, manifest.version, wait=wait)
        with st.read_lock:
            snap = Snapshot(manifest, self.store, self.cache, self.schema, prev, memo=st.views)
            self._install(st, snap)
        self.cache.retire(prev.manifest.segments_replaced_by(manifest))
        for hook in self.published_hooks:
            try:
                hook(prev, snap)
            except Exception:  # the write landed: a cache's trouble is logged, not answered
                log.exception("after version %d of tenant %s landed", manifest.version, tenant)

    def replace_segments(
        self, tenant: str, build: Callable[[Snapshot], Manifest | None]
    ) -> Manifest | None:
        """Commit a manifest computed by `build` from the newest snapshot (compaction).

        build returns None to abort. Retries on a lost race like commit().
        """
        st = self._state(tenant)
        with st.commit_lock:
            for attempt in range(self.retry.attempts):
                snap = self.snapshot(tenant)
                refuse_writes_onto(snap)
                manifest = build(snap)
                if manifest is None:
                    return None
                manifest = stamped(manifest)
                try:
                    copied = self._put_manifest(tenant, manifest)
                except PreconditionFailed:
                    time.sleep(self.retry.delay(attempt))
                    continue
                self._publish(tenant, st, snap, manifest, copied)
                return manifest
        raise Unavailable("compaction lost too many races", hint="Run it again later.")


def refuse_writes_onto(snap: Snapshot) -> None:
    """A write onto a fallback snapshot would commit over the damaged newest manifest without
    the changes it held: refused (CorruptObject) until `memlake repair` makes a new one."""
    if snap.damage is None:
        return
    version, why = snap.damage
    raise CorruptObject(
        f"version {version} of this memory store's manifest is damaged ({why.message}); reads"
        f" use version {snap.version}, and writes are refused until it is repaired",
        hint=CHECK_HINT,
    )
