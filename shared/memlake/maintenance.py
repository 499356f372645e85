"""Scheduled lake maintenance for every tenant in the store: the vectors writes left pending
(memlake.search.backfill), then compaction, then GC.

The MaintenanceFunction (EventBridge schedule) runs this; it is the only Lambda allowed to
list and delete objects. `memlake serve` and `memlake stdio` do the same work in a background
thread (Maintenance) for the tenants they have touched (embed_pending_tenants on every tick).
One tenant's failure is logged and does not stop the others.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from memlake.errors import MemlakeError
from memlake.ids import TENANT_PATTERN
from memlake.lake.compaction import compact
from memlake.lake.gc import collect_garbage
from memlake.search.backfill import embed_pending
from memlake.store.base import ObjectStore

if TYPE_CHECKING:
    from memlake.services import Services

log = logging.getLogger("memlake.maintenance")
TENANTS_PREFIX = "tenants/"


@dataclass
class MaintenanceReport:
    tenants: int = 0
    compacted_tables: int = 0
    rows_dropped: int = 0
    deleted_objects: int = 0
    deleted_manifests: int = 0
    passages_embedded: int = 0
    passages_pending: int = 0
    failed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _s3_tenants(store: Any) -> set[str]:
    """Tenant folders by delimiter listing: one page per 1000 tenants, not one per object."""
    prefix = store.prefix + TENANTS_PREFIX
    pages = store.client.get_paginator("list_objects_v2").paginate(
        Bucket=store.bucket, Prefix=prefix, Delimiter="/"
    )
    found = set()
    for page in pages:
        for common in page.get("CommonPrefixes", []):
            found.add(common["Prefix"][len(prefix) :].rstrip("/"))
    return found


def discover_tenants(store: ObjectStore) -> list[str]:
    """Every tenant with objects in the store (names that are not valid tenants are skipped)."""
    from memlake.store.s3 import S3Store

    if isinstance(store, S3Store):
        names = _s3_tenants(store)
    else:
        names = {
            info.key[len(TENANTS_PREFIX) :].split("/", 1)[0] for info in store.list(TENANTS_PREFIX)
        }
    return sorted(n for n in names if TENANT_PATTERN.match(n))


def embed_pending_tenants(
    services: Services, tenants: list[str], *, max_passages: int, deadline: float | None = None
) -> int:
    """The local server's share of the deferred embedding: at most `max_passages` passages
    over all `tenants` (one maintenance tick); returns how many were embedded."""
    done = 0
    for tenant in tenants:
        if done >= max_passages:
            break
        try:
            done += embed_pending(
                services.lake,
                services.search,
                tenant,
                max_passages=max_passages - done,
                deadline=deadline,
            ).passages
        except Exception:  # a background thread: log it, try again on the next tick
            log.exception("embedding pending passages failed for tenant %s", tenant)
    return done


def run_maintenance(
    services: Services,
    *,
    tenants: list[str] | None = None,
    min_segments: int = 8,
    grace_seconds: float = 900,
    embed_passages: int = 4096,
    deadline: float | None = None,
) -> MaintenanceReport:
    """Every tenant: up to `embed_passages` pending passages (stopping at `deadline`, a
    time.monotonic() value), compaction, GC."""
    report = MaintenanceReport()
    lake = services.lake
    for tenant in tenants if tenants is not None else discover_tenants(lake.store):
        report.tenants += 1
        failed = False
        try:  # an embedding failure (a model that will not load, say) must not stop compaction
            vec = embed_pending(
                lake, services.search, tenant, max_passages=embed_passages, deadline=deadline
            )
            report.passages_embedded += vec.passages
            report.passages_pending += vec.left
        except Exception:
            log.exception("embedding pending passages failed for tenant %s", tenant)
            failed = True
        try:
            comp = compact(lake, tenant, min_segments=min_segments)
            report.compacted_tables += len(comp.merged)
            report.rows_dropped += comp.rows_dropped
            gc = collect_garbage(lake, tenant, grace_seconds=grace_seconds)
            report.deleted_objects += gc.deleted_objects
            report.deleted_manifests += gc.deleted_manifests
        except Exception as e:  # one tenant's failure never stops the others
            code = e.code if isinstance(e, MemlakeError) else type(e).__name__
            log.error("maintenance failed for tenant %s: %s", tenant, code, exc_info=True)
            failed = True
        if failed:
            report.failed.append(tenant)
    return report


class Maintenance(threading.Thread):
    """The local doors' background maintenance (`memlake serve`, `memlake stdio`): every
    `interval` seconds compacts the tenants this process touched whose small segments pile
    up, embeds passages left pending, and collects garbage hourly."""

    def __init__(self, services: Services, interval: float = 2.0) -> None:
        super().__init__(name="memlake-maintenance", daemon=True)
        self.services = services
        self.interval = interval
        self.stop_event = threading.Event()
        self._last_gc = time.monotonic()

    def run(self) -> None:
        while not self.stop_event.wait(self.interval):
            try:
                self.tick()
            except Exception:  # the thread must outlive any one failure: try on the next tick
                log.exception("maintenance tick failed")

    def tick(self) -> None:
        lake = self.services.lake
        min_segments = self.services.settings.compact_min_segments
        gc_due = time.monotonic() - self._last_gc > 3600
        tenants = lake.known_tenants()
        for tenant in tenants:
            try:
                snap = lake.snapshot(tenant)
                if any(len(s) >= min_segments for s in snap.manifest.tables.values()):
                    compact(lake, tenant, min_segments=min_segments // 2)
                if gc_due:
                    collect_garbage(lake, tenant)
            except Exception:
                log.exception("maintenance failed for tenant %s", tenant)
        if gc_due:
            self._last_gc = time.monotonic()
        embed_pending_tenants(  # vectors writes left pending
            self.services, tenants, max_passages=self.services.settings.embed_batch_passages
        )
