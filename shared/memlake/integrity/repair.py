"""`memlake repair`: a new manifest around the damage `memlake check` found.

What it does, in order (dry run by default: the plan is reported, nothing is written):
- a damaged newest manifest: the repaired manifest starts from the newest intact one (the
  commits after it are lost: the manifest that named their objects is unreadable);
- a damaged segment: replaced by the intact inputs it was compacted from, when older manifests
  still name them (memlake.integrity.history), else dropped (its rows are lost: counted);
- a damaged index shard: rebuilt from the tables (stored vectors; episodes without them are
  embedded again), else dropped when no live episode is left in it;
- when episode rows were lost, the shards' entries for them are marked dead (search never
  shows a hit without its row) and their pending vectors forgotten;
- the repaired manifest is committed create-exclusive as the version after the newest stored
  (a writer that commits first makes repair stop: run it again), the `_latest.json` hint
  rewritten, and the report written as an object the manifest names (extra["repairs"]).
Nothing is deleted: damaged objects stay until GC finds no retained manifest naming them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from memlake.episodes import TABLE as EPISODES
from memlake.errors import Unavailable
from memlake.ids import new_id
from memlake.integrity.check import (
    REPAIRED_VERSIONS,
    CheckReport,
    check_tenant,
    manifest_versions,
)
from memlake.integrity.history import History
from memlake.integrity.shards import ShardRepair
from memlake.lake import Lake, Snapshot, keys
from memlake.lake.manifest import Manifest, SegmentRef
from memlake.search.index.state import EXTRA_KEY, SearchState
from memlake.search.searcher import Searcher
from memlake.store.base import PreconditionFailed

REPAIRS_KEY = "repairs"  # Manifest.extra: keys of the repair reports, newest last
KEEP_REPORTS = 20


@dataclass(frozen=True)
class RepairStep:
    action: str  # roll_back | restore_inputs | drop_segment | rebuild_shard | drop_shard | ...
    key: str
    detail: str
    rows_recovered: int = 0
    rows_lost: int = 0


@dataclass
class RepairReport:
    tenant: str
    applied: bool
    check: CheckReport
    base_version: int = 0
    new_version: int | None = None
    steps: list[RepairStep] = field(default_factory=list)
    report_key: str = ""

    @property
    def rows_recovered(self) -> int:
        return sum(s.rows_recovered for s in self.steps)

    @property
    def rows_lost(self) -> int:
        return sum(s.rows_lost for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "applied": self.applied,
            "clean_before": self.check.clean,
            "damage": self.check.to_dict()["damage"],
            "base_version": self.base_version,
            "new_version": self.new_version,
            "rows_recovered": self.rows_recovered,
            "rows_lost": self.rows_lost,
            "steps": [{k: v for k, v in asdict(s).items() if v} for s in self.steps],
            **({"report_key": self.report_key} if self.report_key else {}),
        }


def _fix_segments(
    report: RepairReport, base: Manifest, history: History
) -> dict[str, tuple[SegmentRef, ...]]:
    damaged = report.check.damaged_keys("segment")
    tables = dict(base.tables)
    for table, segments in base.tables.items():
        fixed: list[SegmentRef] = []
        restored: set[str] = set()  # a compaction's inputs hold every part it wrote: once
        for ref in segments:
            if ref.key not in damaged:
                fixed.append(ref)
                continue
            inputs = history.inputs_of(table, ref, base.version)
            if inputs is not None:
                fixed.extend(s for s in inputs if s.key not in restored)
                restored.update(s.key for s in inputs)
                why = f"compacted from {len(inputs)} intact segments older manifests still name"
                report.steps.append(
                    RepairStep("restore_inputs", ref.key, why, rows_recovered=ref.rows)
                )
            else:
                why = f"{damaged[ref.key].problem}; no older manifest names what it held"
                report.steps.append(RepairStep("drop_segment", ref.key, why, rows_lost=ref.rows))
        tables[table] = tuple(fixed)
    return tables


def _fix_index(
    lake: Lake,
    searcher: Searcher,
    report: RepairReport,
    base: Manifest,
    tables: dict[str, tuple[SegmentRef, ...]],
    state: SearchState,
) -> SearchState:
    lost = any(s.rows_lost for s in report.steps if f"/tables/{EPISODES}/" in s.key)
    repair = ShardRepair(
        lake, searcher, report.tenant, report.check.newest_version + 1, apply=report.applied
    )
    snap = Snapshot(replace(base, tables=tables), lake.store, lake.cache, lake.schema)
    state = repair.repair(state, snap, report.check, lost)
    for key, count in repair.plan.rebuilt:
        why = f"damaged; rebuilt from the tables ({count} live episodes)"
        report.steps.append(RepairStep("rebuild_shard", key, why))
    for key in repair.plan.dropped:
        report.steps.append(RepairStep("drop_shard", key, "damaged; no live episode is left in it"))
    if lost:
        why = f"{repair.plan.marked_dead} index entries of lost episode rows marked dead"
        report.steps.append(RepairStep("mark_dead", "", why))
    return state


def repair_tenant(
    lake: Lake, searcher: Searcher, tenant: str, *, apply: bool = False
) -> RepairReport:
    """Plan (and with `apply`, commit) the repair of a tenant; see the module's docstring."""
    store = lake.store
    check = check_tenant(store, tenant)
    report = RepairReport(tenant, apply, check, base_version=check.readable_version)
    if check.clean:
        return report
    base = lake.load_manifest(tenant, check.readable_version)
    if check.readable_version < check.newest_version:
        lost = check.newest_version - check.readable_version
        report.steps.append(
            RepairStep(
                "roll_back",
                keys.manifest_key(tenant, check.newest_version),
                f"start from version {base.version}, the newest intact manifest: the {lost}"
                " newer commit(s) are lost with the manifest that named them",
            )
        )
    versions = manifest_versions(store, tenant)
    history = History(store, tenant, min(versions, default=1), base.version)
    tables = _fix_segments(report, base, history)
    extra = dict(base.extra)
    state = SearchState.from_extra(base.extra)
    if state is not None:
        extra[EXTRA_KEY] = _fix_index(lake, searcher, report, base, tables, state).to_json()
    if any(d.kind == "hint" for d in check.damage) and len(report.steps) == 0:
        report.steps.append(RepairStep("rewrite_hint", keys.hint_key(tenant), "unreadable"))
    if not apply:
        return report
    return _commit(lake, report, base, tables, extra)


def _commit(
    lake: Lake,
    report: RepairReport,
    base: Manifest,
    tables: dict[str, tuple[SegmentRef, ...]],
    extra: dict[str, Any],
) -> RepairReport:
    tenant, version = report.tenant, report.check.newest_version + 1
    report.new_version = version
    report.report_key = keys.object_key(tenant, "repairs", f"{new_id()}.json")
    record = json.dumps(report.to_dict(), indent=1, sort_keys=True).encode()
    lake.store.put(report.report_key, record, if_absent=True)
    extra[REPAIRS_KEY] = [*extra.get(REPAIRS_KEY, [])[-(KEEP_REPORTS - 1) :], report.report_key]
    went_around = {d.version for d in report.check.damage if d.kind == "manifest"}
    extra[REPAIRED_VERSIONS] = sorted(went_around | set(extra.get(REPAIRED_VERSIONS, ())))
    manifest = replace(base.next(tables, extra), version=version)
    try:
        lake.store.put(keys.manifest_key(tenant, version), manifest.to_bytes(), if_absent=True)
    except PreconditionFailed as e:
        raise Unavailable(
            f"a write committed version {version} while the repair ran; nothing was changed",
            hint="Run memlake repair again.",
        ) from e
    lake.store.put(keys.hint_key(tenant), str(version).encode())
    lake.forget(tenant)
    return report
