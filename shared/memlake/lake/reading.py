"""The read side of the lake (memlake.lake.engine.Lake): a tenant's newest snapshot, found
from the snapshot this process holds, the hint and the manifest's copy (memlake.lake.head_copy),
or by probing the manifest versions (memlake.lake.manifest_log); older versions by number."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa

from memlake.errors import CorruptObject, NotFound
from memlake.lake import head_copy, manifest_log
from memlake.lake.commit_state import TenantState
from memlake.lake.manifest import Manifest
from memlake.lake.segments import SegmentCache
from memlake.lake.snapshot import Snapshot
from memlake.store.base import ObjectStore

#: a process that read a tenant longer ago than this re-anchors at the hint first
HINT_RECHECK_SECONDS = 60.0


def _settled_already() -> bool:
    return True


class Reading:
    """What Lake reads with: its store, segment cache, schemas and per-tenant state."""

    store: ObjectStore
    cache: SegmentCache
    _tenants: dict[str, TenantState]
    _tenants_lock: threading.Lock

    if TYPE_CHECKING:

        def schema(self, name: str) -> pa.Schema: ...

        def _state(self, tenant: str) -> TenantState: ...

    def load_manifest(self, tenant: str, version: int) -> Manifest:
        return manifest_log.load_manifest(self.store, tenant, version)

    def snapshot(self, tenant: str, *, version: int | None = None) -> Snapshot:
        """The newest committed snapshot (or an older version for point-in-time reads)."""
        st = self._state(tenant)
        if version is not None:
            current = st.snapshot
            if current is not None and current.version == version:
                return current
            manifest = self.load_manifest(tenant, version)
            return Snapshot(manifest, self.store, self.cache, self.schema, memo=st.views)
        with st.read_lock:
            current = st.snapshot
            if current is None:  # cold: the hint and the copy, then the checks (two rounds)
                cold = head_copy.cold_newest(self.store, tenant)
                if cold.manifest is not None and cold.newest():
                    return self._settled(st, cold.manifest)
            known = current.version if current is not None else 0
            if current is None or time.monotonic() - st.validated_at > HINT_RECHECK_SECONDS:
                # a long-idle cache may sit below manifests GC has since removed: re-anchor
                known = max(known, manifest_log.checked_hint(self.store, tenant))
                st.validated_at = time.monotonic()
            latest = manifest_log.newest_version(self.store, tenant, known)
            if current is not None and latest in (current.version, current.damaged_version):
                return current
            try:
                manifest, damage = self.load_manifest(tenant, latest), None
            except (CorruptObject, NotFound) as e:
                if latest == 0:
                    raise
                manifest, damage = manifest_log.newest_intact(self.store, tenant, latest, e), e
            snap = Snapshot(manifest, self.store, self.cache, self.schema, current, memo=st.views)
            if damage is not None:
                snap.damage = (latest, damage)
                st.snapshot = None  # the fallback replaces it: later reads skip `latest`
            self._install(st, snap)
            return snap

    def snapshot_ahead(self, tenant: str) -> tuple[Snapshot, Callable[[], bool]]:
        """For a reader that can do its work again (search): the newest snapshot, or, when
        this process holds none, the snapshot of the manifest's copy a writer left beside the
        hint (memlake.lake.head_copy), before the reads that check it have answered: its
        reads start a round trip sooner. Call `settled()` before answering from it: False
        means it was not the newest, and the work is done again on `snapshot(tenant)`."""
        st = self._state(tenant)
        with st.read_lock:
            cold = st.snapshot is None
        if not cold:
            return self.snapshot(tenant), _settled_already
        read = head_copy.cold_newest(self.store, tenant)
        if read.manifest is None or read.checks is None:
            if read.manifest is not None:
                with st.read_lock:
                    return self._settled(st, read.manifest), _settled_already
            return self.snapshot(tenant), _settled_already
        manifest = read.manifest
        snap = Snapshot(manifest, self.store, self.cache, self.schema, memo=st.views)

        def settled() -> bool:
            if not read.newest():
                return False
            with st.read_lock:
                st.validated_at = time.monotonic()
                self._install(st, snap)
            return True

        return snap, settled

    def _settled(self, st: TenantState, manifest: Manifest) -> Snapshot:
        """A cold reader's newest manifest, checked: installed (under st.read_lock)."""
        snap = Snapshot(manifest, self.store, self.cache, self.schema, memo=st.views)
        st.validated_at = time.monotonic()
        self._install(st, snap)
        return snap

    def forget(self, tenant: str) -> None:
        """Drop what this process knows of a tenant's manifests (after `memlake repair`
        committed around a damaged version, the next read finds the repaired one)."""
        with self._tenants_lock:
            self._tenants.pop(tenant, None)

    def _install(self, st: TenantState, snap: Snapshot) -> None:
        if st.snapshot is None or snap.version > st.snapshot.version:
            if st.snapshot is not None:
                st.snapshot.release_previous()
            st.snapshot = snap
