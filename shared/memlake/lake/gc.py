"""Garbage collection: remove objects no retained manifest references.

Objects are only removed after a grace period longer than the longest Lambda run (15 min), so
a writer that has put its segment but not yet committed its manifest never loses it. Old
manifests older than the history window are removed from the bottom up, keeping versions
contiguous above the oldest retained one (readers probe forward from any retained version).
On a local store, temporary files a crashed writer left (`.tmp-*`) older than the same grace
period go too; one a writer still holds is kept (memlake.store.local). A process reads each
retained manifest once, not on every pass (memlake.lake.references).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from memlake.errors import StorageError
from memlake.lake import keys
from memlake.lake.engine import Lake
from memlake.lake.manifest import Manifest
from memlake.lake.manifest_log import ManifestCut, cut_marker
from memlake.pools import STORE_IO
from memlake.store.base import ObjectStore

MIN_GRACE_SECONDS = 60
#: the grace period every door uses (memlake.maintenance.maintenance_policy)
GRACE_SECONDS = 900.0
#: how long old manifests (and every object they name) are kept for repair (decision 2701)
HISTORY_SECONDS = 7 * 86400.0
#: tries of each manifest read (a transient failure: a reset, a timeout, 503)
LOAD_ATTEMPTS = 4


@dataclass
class GcReport:
    deleted_objects: int = 0
    deleted_manifests: int = 0
    kept_objects: int = 0
    deleted_temp_files: int = 0
    #: deletes the store failed (a reset, a timeout, 503): left for the next pass
    failed_deletes: int = 0


def _load(lake: Lake, tenant: str, version: int) -> Manifest | None:
    """A retained manifest, its read tried again after a transient failure: a pass reads every
    manifest committed since the last (hundreds at ~15 commits a second), and with the soak's
    1% of requests failing, one try each left 96% of passes unfinished. None: an erasure cut
    it (a marker that names nothing)."""
    for attempt in range(LOAD_ATTEMPTS):
        try:
            return lake.load_manifest(tenant, version)
        except ManifestCut:  # an erasure cut it: it names nothing
            return None
        except StorageError as e:
            if not (e.retryable and e.transient) or attempt == LOAD_ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0, 0.05 * 2**attempt))
    raise AssertionError("unreachable")


def _deleted(store: ObjectStore, key: str, report: GcReport | CutReport) -> bool:
    """Delete one object; a transient failure is counted and left for the next pass (one
    failed request of thousands must not throw the pass away: in the soak, with 1% of requests
    failing, every pass failed and the store only grew)."""
    try:
        store.delete(key)
    except StorageError as e:
        if not (e.retryable and e.transient):
            raise
        report.failed_deletes += 1
        return False
    return True


def collect_garbage(
    lake: Lake,
    tenant: str,
    *,
    grace_seconds: float = GRACE_SECONDS,
    history_seconds: float = HISTORY_SECONDS,
    now: datetime | None = None,
) -> GcReport:
    grace_seconds = max(grace_seconds, MIN_GRACE_SECONDS)
    now = now or datetime.now(UTC)
    report = GcReport()
    latest = lake.snapshot(tenant)
    prefix = keys.tenant_prefix(tenant)
    objects = list(lake.store.list(prefix))
    manifest_versions: dict[int, datetime] = {}
    data_objects = []
    for obj in objects:
        version = keys.version_of_manifest_key(obj.key) if "/manifest/" in obj.key else None
        if version is not None:
            manifest_versions[version] = obj.last_modified
        elif not obj.key.endswith((keys.HINT_NAME, keys.HEAD_NAME)):
            data_objects.append(obj)

    history_cutoff = now - timedelta(seconds=history_seconds)
    retained = [
        v
        for v, modified in manifest_versions.items()
        if v == latest.version or modified >= history_cutoff or v > latest.version
    ]
    floor = min(retained) if retained else latest.version
    refs = lake._state(tenant).references
    with refs.lock:  # one pass of this process at a time folds and reads it
        refs.fold(retained, lambda v: _load(lake, tenant, v))
        named = {obj.key for obj in data_objects if refs.named_since(obj.key, floor)}
        grace_cutoff = now - timedelta(seconds=grace_seconds)
        deleted = []
        for obj in data_objects:
            if obj.key in named or obj.last_modified >= grace_cutoff:
                report.kept_objects += 1
                continue
            if _deleted(lake.store, obj.key, report):
                deleted.append(obj.key)
                report.deleted_objects += 1
        refs.forget(deleted)
        refs.prune(floor, {obj.key for obj in data_objects})
    for v in sorted(manifest_versions):
        if v < floor and manifest_versions[v] < grace_cutoff:
            if not _deleted(lake.store, keys.manifest_key(tenant, v), report):
                break  # from the bottom up: no gap below a version still stored
            report.deleted_manifests += 1
    remove_temp = getattr(lake.store, "remove_stale_temp_files", None)  # LocalStore only
    if remove_temp is not None:
        report.deleted_temp_files = remove_temp(prefix, grace_cutoff)
    return report


@dataclass
class CutReport:
    #: manifests below the cut replaced by markers that name nothing
    cut_manifests: int = 0
    #: objects only those manifests named, deleted at once (no grace)
    removed: list[str] = field(default_factory=list)
    #: objects no manifest names that `holds` found holding erased rows, deleted at once
    removed_orphans: list[str] = field(default_factory=list)
    failed_deletes: int = 0
    #: the oldest version cut (history under it was kept)
    first_cut: int = 0

    @property
    def complete(self) -> bool:
        return self.failed_deletes == 0


def cut_history(
    lake: Lake,
    tenant: str,
    below: int,
    *,
    after: datetime | None = None,
    holds: Callable[[str], bool] | None = None,
) -> CutReport:
    """An erasure's GC (memlake.erasure, decision 4801): the history from the first manifest
    stored at or after `after` (when the oldest erased target was first written; None: all of
    it) up to version `below` is cut: each of those manifests is overwritten with a marker
    that names nothing (ManifestCut), and every object they alone named that was stored since
    `after` (or that `holds(key)` says holds erased rows) is deleted now, without the grace
    period. History older than `after` holds nothing of the targets and stays for GC's
    window. An object no manifest ever named (a lost race's, or a merge or compaction still in
    flight) keeps its grace unless `holds(key)` (a write that lost its race can hold an erased
    episode, and can never be committed).

    The order survives a crash anywhere: objects go first, then the manifests that named them,
    so a pass that stopped is finished by the next. A writer holding a snapshot older than
    `below` finds its next version there (a marker) and loses the race as it always did;
    a reader of one gets a retryable error (memlake.tools.base)."""
    report = CutReport()
    prefix = keys.tenant_prefix(tenant)
    stored: dict[int, datetime] = {}
    data_objects: dict[str, datetime] = {}
    for obj in lake.store.list(prefix):
        version = keys.version_of_manifest_key(obj.key) if "/manifest/" in obj.key else None
        if version is not None:
            stored[version] = obj.last_modified
        elif not obj.key.endswith((keys.HINT_NAME, keys.HEAD_NAME)):
            data_objects[obj.key] = obj.last_modified
    refs = lake._state(tenant).references
    with refs.lock:
        refs.fold([v for v in stored if v <= below], lambda v: _load(lake, tenant, v))
        # the first version written since `after` (a marker's time is when it was cut: skip)
        since = [v for v, at in stored.items() if v < below and v not in refs.cut]
        first = min((v for v in since if after is None or stored[v] >= after), default=below)
        gone: list[tuple[str, bool]] = []  # (key, committed once)
        for key, modified in data_objects.items():
            newest = refs.newest.get(key)
            if newest is not None and newest >= below:
                continue
            if newest is not None and newest >= first and (after is None or modified >= after):
                gone.append((key, True))  # stored since the target was, named only by the cut
            elif holds is not None and (newest is None or newest >= first):
                try:
                    if holds(key):  # it says so itself
                        gone.append((key, newest is not None))
                except StorageError as e:
                    if not (e.retryable and e.transient):
                        raise
                    report.failed_deletes += 1  # unknown: the next pass looks again

        # side by side: on S3 each is a round trip (decision 4801)
        def delete(item: tuple[str, bool]) -> bool:  # a delete is idempotent: tried 3 times
            return any(_deleted(lake.store, item[0], GcReport()) for _ in range(3))

        done = list(STORE_IO.get().map(delete, gone))
        report.failed_deletes += done.count(False)
        for (key, committed), ok in zip(gone, done, strict=True):
            if ok:
                (report.removed if committed else report.removed_orphans).append(key)
        refs.forget(report.removed + report.removed_orphans)
        if not report.complete:
            return report  # the manifests stay until every object they named is gone

        def cut(version: int) -> bool:
            for _ in range(3):  # a put of the same bytes: safe to repeat
                try:
                    cut_marker(lake.store, tenant, version)
                except StorageError as e:
                    if not (e.retryable and e.transient):
                        raise
                    continue
                return True
            return False

        todo = [v for v in sorted(stored) if first <= v < below and v not in refs.cut]
        cuts = list(STORE_IO.get().map(cut, todo))
        refs.cut.update(v for v, ok in zip(todo, cuts, strict=True) if ok)
    report.cut_manifests = sum(cuts)
    report.first_cut = first
    report.failed_deletes += len(cuts) - sum(cuts)
    return report
