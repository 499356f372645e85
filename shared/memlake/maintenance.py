"""Lake maintenance, one policy for every door: the vectors writes left pending
(memlake.search.backfill), then merges of index shards into tiers above the write path's
and folds of its small shards into partial ones (memlake.search.merging), then the erasure
of what was deleted since the last pass (memlake.erasure: every pass, every door), then
compaction, then GC.

`maintenance_policy(settings, door)` holds every threshold, derived from Settings; the doors
differ only in how often they run (docs/decisions/1155-maintenance-policy.md):
- "tick": `memlake serve` and `memlake stdio` run `run_maintenance` in a background thread
  (Maintenance) every 2 s over the tenants they have touched, GC hourly;
- "scheduled": the MaintenanceFunction (EventBridge, hourly) over every tenant in the store;
  it is the only Lambda allowed to list and delete objects;
- "operator": `memlake maintain` runs the scheduled pass; `memlake compact` / `memlake gc`
  run one step of `maintain_tenant` with the operator's thresholds.
One tenant's failure is logged and does not stop the others.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal

from memlake.erasure.retention import Retention, expire
from memlake.erasure.run import ErasureReport, erase_pending
from memlake.errors import CorruptObject, MemlakeError
from memlake.ids import TENANT_PATTERN
from memlake.lake.compaction import CompactionReport, compact
from memlake.lake.gc import GRACE_SECONDS, HISTORY_SECONDS, GcReport, collect_garbage
from memlake.lake.retry import retried
from memlake.search.backfill import BackfillReport, embed_pending
from memlake.search.index.layout import MAX_TIER
from memlake.search.merge_policy import MergeRules
from memlake.search.merging import MergeReport, merge_shards
from memlake.store.base import ObjectStore

if TYPE_CHECKING:
    from memlake.config import Settings
    from memlake.services import Services

log = logging.getLogger("memlake.maintenance")
TENANTS_PREFIX = "tenants/"
#: the local tick collects garbage this often (GC lists every object of a tenant)
GC_EVERY_SECONDS = 3600.0
#: embedding batches one scheduled run may spend per tenant (it also stops at its deadline)
SCHEDULED_EMBED_BATCHES = 16

Door = Literal["tick", "scheduled", "operator"]


@dataclass(frozen=True)
class MaintenancePolicy:
    """What one pass does to a tenant. Build it with maintenance_policy, not by hand."""

    #: compact once some table has this many segments (1: whenever a run qualifies; 0: never)
    compact_at: int
    #: ... merging each run of at least this many small segments in a row
    merge_run: int
    #: pending passages embedded per tenant (0: none)
    embed_passages: int
    #: ... and over all the tenants of one run (None: no cap beyond the per-tenant one)
    embed_budget: int | None
    #: delete objects unreferenced for this long (None: no GC in this pass)
    gc_grace_seconds: float | None
    #: index shards merged up to this tier (memlake.search.merging; 2 or less: none), at most
    #: `merge_limit` merges per tenant (None: until none is due or the deadline), each within
    #: `merge_memory` bytes by its estimate (None: no bound)
    merge_tier: int = 0
    merge_limit: int | None = None
    merge_memory: int | None = None
    #: how long GC keeps old manifests and what they name (a soak compresses the week)
    gc_history_seconds: float = HISTORY_SECONDS


def maintenance_policy(settings: Settings, door: Door) -> MaintenancePolicy:
    """Every maintenance threshold, from MEMLAKE_COMPACT_MIN_SEGMENTS,
    MEMLAKE_EMBED_BATCH_PASSAGES and MEMLAKE_SHARD_MERGE_*, by how often the door runs."""
    segments, batch = settings.compact_min_segments, settings.embed_batch_passages
    tier, memory = settings.shard_merge_tier, settings.shard_merge_memory_bytes or None
    if door == "tick":  # every 2 s: wait for a pile of segments; one batch over all tenants;
        # one shard merge per tenant (tens of seconds on this thread: the next tick waits)
        return MaintenancePolicy(
            segments, segments // 2, batch, batch, GRACE_SECONDS, tier, 1, memory
        )
    if door == "scheduled":  # hourly: merge shorter runs; embed more, per tenant; every shard
        # merge due, while the deadline lasts
        runs = max(2, segments // 4)
        embed = SCHEDULED_EMBED_BATCHES * batch
        return MaintenancePolicy(1, runs, embed, None, GRACE_SECONDS, tier, None, memory)
    # an operator asked for it now: merge any run of two (`memlake compact --min-segments`);
    # `memlake compact` and `memlake gc` are one step each: no embedding, no shard merges
    return MaintenancePolicy(1, 2, 0, None, GRACE_SECONDS)


@dataclass
class TenantReport:
    embedded: BackfillReport | None = None
    embed_failed: bool = False
    merged: MergeReport | None = None
    merge_failed: bool = False
    compaction: CompactionReport | None = None
    gc: GcReport | None = None
    erasure: ErasureReport | None = None
    erasure_failed: bool = False
    expired: int = 0  # episodes past the retention limit, deleted (and erased) in this pass


@dataclass
class MaintenanceReport(GcReport):
    """A run over many tenants: the sum of their GC reports, and the rest."""

    tenants: int = 0
    compacted_tables: int = 0
    rows_dropped: int = 0
    passages_embedded: int = 0
    passages_pending: int = 0
    #: index shards rebuilt to take the vectors the pass embedded (memlake.search.catchup)
    shards_caught_up: int = 0
    shard_merges: int = 0  # index shard runs merged into one (memlake.search.merging)
    shard_merges_deferred: int = 0  # due, but past the deadline or memory bound
    #: episodes and threads erased from every object (memlake.erasure), and those left for
    #: the next pass
    erased: int = 0
    erasures_pending: int = 0
    expired: int = 0  # of them, episodes past the retention limit (MEMLAKE_RETENTION_DAYS)
    failed: list[str] = field(default_factory=list)

    def add(self, one: TenantReport) -> None:
        if one.embedded is not None:
            self.passages_embedded += one.embedded.passages
            self.passages_pending += one.embedded.left
            self.shards_caught_up += one.embedded.indexed.shards
        if one.merged is not None:
            self.shard_merges += one.merged.merged
            self.shard_merges_deferred += one.merged.deferred
        self.expired += one.expired
        if one.erasure is not None:
            self.erased += one.erasure.erased
            self.erasures_pending += one.erasure.pending
        if one.compaction is not None:
            self.compacted_tables += len(one.compaction.merged)
            self.rows_dropped += one.compaction.rows_dropped
        if one.gc is not None:
            for f in fields(GcReport):
                setattr(self, f.name, getattr(self, f.name) + getattr(one.gc, f.name))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: (tenant, damage) pairs already logged by this process (memlake serve ticks every 2 s)
_DAMAGE_LOGGED: set[tuple[str, str]] = set()


def discover_tenants(store: ObjectStore) -> list[str]:
    """Every tenant with objects in the store (names that are not valid tenants are skipped)."""
    return [n for n in store.list_prefixes(TENANTS_PREFIX) if TENANT_PATTERN.match(n)]


def maintain_tenant(
    services: Services, tenant: str, policy: MaintenancePolicy, *, deadline: float | None = None
) -> TenantReport:
    """One pass over one tenant: up to `policy.embed_passages` pending passages (stopping at
    `deadline`, a time.monotonic() value), index shard merges (none started that would pass
    it), compaction, GC. An embedding or merge failure (a model that will not load, say) is
    logged and reported and never stops compaction; damage, compaction and GC raise."""
    lake = services.lake
    out = TenantReport()
    if policy.embed_passages > 0:
        try:
            out.embedded = embed_pending(
                lake,
                services.search,
                tenant,
                max_passages=policy.embed_passages,
                deadline=deadline,
            )
        except Exception:
            log.exception("embedding pending passages failed for tenant %s", tenant)
            out.embed_failed = True
    if policy.merge_tier > MAX_TIER:
        try:
            out.merged = merge_shards(
                lake,
                tenant,
                rules=MergeRules.for_tier(policy.merge_tier),
                limit=policy.merge_limit,
                deadline=deadline,
                memory=policy.merge_memory,
            )
        except CorruptObject:
            raise  # logged once per object by run_maintenance
        except Exception:
            log.exception("merging index shards failed for tenant %s", tenant)
            out.merge_failed = True
    cfg = services.settings
    retention = Retention(cfg.retention_days, cfg.retention_context_days)
    if retention and policy.gc_grace_seconds is not None:  # the passes that collect garbage
        out.expired = expire(lake, tenant, retention, services.on_episode_delete)
    # before compaction and GC: deleted episodes leave every object in this pass (issue 48);
    # a failure (a store fault) leaves the requests pending for the next pass, and never stops
    # compaction and GC
    try:
        out.erasure = erase_pending(lake, tenant, forget=services.search.forget_objects)
    except CorruptObject:
        raise  # logged once per object by run_maintenance
    except Exception:
        log.exception("erasing deleted episodes failed for tenant %s", tenant)
        out.erasure_failed = True
    if policy.compact_at == 1 or (
        policy.compact_at > 1
        and any(len(s) >= policy.compact_at for s in lake.snapshot(tenant).manifest.tables.values())
    ):
        out.compaction = retried(lambda: compact(lake, tenant, min_segments=policy.merge_run))
    if policy.gc_grace_seconds is not None:
        grace, history = policy.gc_grace_seconds, policy.gc_history_seconds
        out.gc = retried(
            lambda: collect_garbage(lake, tenant, grace_seconds=grace, history_seconds=history)
        )
    return out


def run_maintenance(
    services: Services,
    policy: MaintenancePolicy,
    *,
    tenants: list[str] | None = None,
    deadline: float | None = None,
) -> MaintenanceReport:
    """maintain_tenant for every tenant (default: every tenant in the store), within the
    policy's embedding budget; a tenant that fails is logged and listed in `failed`."""
    report = MaintenanceReport()
    budget = policy.embed_budget
    for tenant in tenants if tenants is not None else discover_tenants(services.lake.store):
        report.tenants += 1
        step = (
            policy
            if budget is None
            else replace(policy, embed_passages=min(policy.embed_passages, budget))
        )
        try:
            one = maintain_tenant(services, tenant, step, deadline=deadline)
        except CorruptObject as e:  # damage: one line per object and process, not each tick
            if (tenant, e.message) not in _DAMAGE_LOGGED:
                _DAMAGE_LOGGED.add((tenant, e.message))
                log.warning("maintenance skips tenant %s until repaired: %s", tenant, e.message)
            report.failed.append(tenant)
            continue
        except Exception as e:  # one tenant's failure never stops the others
            code = e.code if isinstance(e, MemlakeError) else type(e).__name__
            log.error("maintenance failed for tenant %s: %s", tenant, code, exc_info=True)
            report.failed.append(tenant)
            continue
        report.add(one)
        if one.embed_failed or one.merge_failed or one.erasure_failed:
            report.failed.append(tenant)
        if budget is not None and one.embedded is not None:
            budget -= one.embedded.passages
    return report


class Maintenance(threading.Thread):
    """The local doors' background maintenance (`memlake serve`, `memlake stdio`): every
    `interval` seconds run_maintenance over the tenants this process touched, with the
    "tick" policy (GC every GC_EVERY_SECONDS)."""

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
        policy = maintenance_policy(self.services.settings, "tick")
        gc_due = time.monotonic() - self._last_gc > GC_EVERY_SECONDS
        if not gc_due:
            policy = replace(policy, gc_grace_seconds=None)
        run_maintenance(self.services, policy, tenants=self.services.lake.known_tenants())
        if gc_due:
            self._last_gc = time.monotonic()
