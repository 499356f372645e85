"""The segments and index shards of the newest manifest that hold an erased target, rewritten
without it, and swapped in by one compare-and-swap commit (as compaction and shard merges
are: memlake.lake.compaction, memlake.search.merging).

A segment is read only when it may hold a target: for tables keyed by the target's id, when
the id lies within its id range; the few tables that point at targets from other columns are
read whole (links, relationships, audit, idempotency, messages: small beside the episodes).
A shard is rebuilt when its dead list holds an erased episode or a version of one was written
in its commit range (memlake.search.index.layout.Layout.rebuild drops dead docs, reusing the
stored term frequencies and vectors of the rest: nothing is re-embedded). A shard left with
no live doc is removed.

The swap applies only if every object it replaces is still in the newest manifest; otherwise
(a compaction or merge replaced one meanwhile) nothing is committed and the caller plans again
on the newer snapshot. Shards' dead lists that grew meanwhile carry over, as a merge's do.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from memlake.erasure.rules import RULES, Rule, Targets, matches, row_seqs, without
from memlake.errors import Unavailable
from memlake.lake import Lake, Snapshot
from memlake.lake.manifest import ERASURE_EPOCH, Manifest, SegmentRef
from memlake.lake.retry import retried
from memlake.lake.segments import write_segment
from memlake.pools import STORE_IO
from memlake.search.index import layout
from memlake.search.index.cache import ShardCache
from memlake.search.index.state import EXTRA_KEY, SearchState, ShardInfo


@dataclass
class Plan:
    #: table -> (old segment, its rewrite or None when nothing is left)
    segments: dict[str, list[tuple[SegmentRef, SegmentRef | None]]] = field(default_factory=dict)
    #: (old shard, its rebuild or None when no live doc is left)
    shards: list[tuple[ShardInfo, ShardInfo | None]] = field(default_factory=list)
    #: target id -> keys of the objects that held it
    held_by: dict[str, set[str]] = field(default_factory=dict)
    rows_erased: int = 0

    def replaced(self) -> list[str]:
        old = [s.key for pairs in self.segments.values() for s, _ in pairs]
        return old + [s.key for s, _ in self.shards]

    def written(self) -> list[str]:
        new = [n.key for pairs in self.segments.values() for _, n in pairs if n is not None]
        return new + [n.key for _, n in self.shards if n is not None]

    def __bool__(self) -> bool:
        return bool(self.segments or self.shards)


def _may_hold(seg: SegmentRef, rule: Rule, ids: set[str]) -> bool:
    if len(rule.columns) != 1 or rule.columns[0][0] != "id" or not seg.min_id:
        return True  # pointed at from other columns: read it
    return any(seg.min_id <= i <= seg.max_id for i in ids)


@dataclass(frozen=True)
class _Rewrite:
    """One table's segments rewritten without the targets (each step tried again after a
    transient store failure: memlake.lake.retry)."""

    lake: Lake
    snap: Snapshot
    table: str
    rule: Rule
    targets: Targets

    def __call__(self, pos: int) -> tuple[SegmentRef, SegmentRef | None, pa.Table, int] | None:
        return retried(lambda: self._one(pos))

    def _one(self, pos: int) -> tuple[SegmentRef, SegmentRef | None, pa.Table, int] | None:
        """(the segment, its rewrite or None when nothing is left, the rows erased, how many);
        None when it holds no target."""
        view = self.snap.table(self.table)
        seg = view.segments[pos]
        data = view.segment_table(pos)
        rows = matches(data, seg.seq, self.rule, self.targets)
        if not rows:
            return None
        kept = without(data, seg.seq, self.rule, rows)
        new = None
        if kept.num_rows:
            stats = self.lake.spec(self.table).stat_columns
            ref = write_segment(self.lake.store, self.snap.tenant, self.table, kept, stats)
            new = replace(ref, seq=seg.seq, compacted=seg.compacted)
        return seg, new, data.take(pa.array(rows, pa.int64())), len(rows)


def _segment_rewrites(
    lake: Lake, snap: Snapshot, targets: Targets, plan: Plan
) -> dict[str, list[int]]:
    """Rewrite the segments holding targets (their new objects written); returns the commit
    versions of the erased episode rows (to find the shards that hold those versions)."""
    versions: dict[str, list[int]] = {}
    for table, segs in snap.manifest.tables.items():
        rule = RULES.get(table)
        if rule is None:
            continue
        ids = {i for column, pick in rule.columns for i in pick(targets)}
        candidates = [p for p, s in enumerate(segs) if _may_hold(s, rule, ids)]
        rewrite = _Rewrite(lake, snap, table, rule, targets)
        for found in STORE_IO.get().map(rewrite, candidates):
            if found is None:
                continue
            seg, new, held, count = found
            plan.segments.setdefault(table, []).append((seg, new))
            plan.rows_erased += count
            for column, _ in rule.columns:
                for name in held.column(column).to_pylist() if not rule.json_id else []:
                    if name in ids:
                        plan.held_by.setdefault(name, set()).add(seg.key)
            if table == "episodes":
                seqs = row_seqs(held, seg.seq).to_pylist()
                for name, seq in zip(held.column("id").to_pylist(), seqs, strict=True):
                    versions.setdefault(name, []).append(seq)
    return versions


def _shard_rebuilds(
    lake: Lake, snap: Snapshot, targets: Targets, versions: dict[str, list[int]], plan: Plan
) -> None:
    state = SearchState.from_extra(snap.extra)
    if state is None or not targets.episodes:
        return
    erased = set(targets.episodes)
    hit: dict[int, set[str]] = {}
    for pos, info in enumerate(state.shards):
        dead = erased.intersection(info.dead)
        if dead:
            hit.setdefault(pos, set()).update(dead)
    for episode_id, seqs in versions.items():
        for seq in seqs:
            at = state.shard_of_seq(seq)
            if at is not None:
                hit.setdefault(at, set()).add(episode_id)
    cache = ShardCache(0)  # not the searcher's: these shards are on their way out
    try:
        writer = layout.Layout(cache, lake.store, snap.tenant, snap.version, state.model)
        for pos in sorted(hit):
            info = state.shards[pos]
            gone = tuple(sorted(hit[pos] - set(info.dead)))  # held live: dropped too
            info_all = replace(info, dead=info.dead + gone)
            # a maintained shard (thousands of episodes) keeps its IVF lists: retraining them
            # was most of an erasure's time (decision 4801)
            big = layout.maintained(info)
            new = (
                None
                if info_all.live <= 0
                else retried(lambda: writer.rebuild(info_all, [], reuse_lists=big))  # noqa: B023
            )
            plan.shards.append((info, new))
            for episode_id in hit[pos]:
                plan.held_by.setdefault(episode_id, set()).add(info.key)
    finally:
        cache.clear()


def plan(lake: Lake, snap: Snapshot, targets: Targets) -> Plan:
    """Rewrite what `snap` names that holds `targets` (new objects written, nothing
    committed)."""
    out = Plan()
    versions = _segment_rewrites(lake, snap, targets, out)
    _shard_rebuilds(lake, snap, targets, versions, out)
    return out


def _apply_segments(tables: dict[str, tuple[SegmentRef, ...]], plan: Plan) -> bool:
    for table, pairs in plan.segments.items():
        current = list(tables.get(table, ()))
        at = {s.key: i for i, s in enumerate(current)}
        if any(old.key not in at for old, _ in pairs):
            return False
        swap = {old.key: new for old, new in pairs}
        kept: list[SegmentRef] = []
        for seg in current:
            new = swap.get(seg.key, seg)
            if new is not None:  # None: nothing of the segment was left
                kept.append(new)
        tables[table] = tuple(kept)
    return True


def _apply_shards(extra: dict[str, Any], plan: Plan) -> bool:
    if not plan.shards:
        return True
    state = SearchState.from_extra(extra)
    if state is None:
        return False
    now = {s.key: s for s in state.shards}
    if any(old.key not in now for old, _ in plan.shards):
        return False
    swap: dict[str, ShardInfo | None] = {}
    for old, new in plan.shards:
        if new is not None:  # dead since the plan: still in the rebuild, live there
            grew = tuple(d for d in now[old.key].dead if d not in set(old.dead))
            new = replace(new, dead=new.dead + grew)
        swap[old.key] = new
    shards = []
    for s in state.shards:
        if s.key not in swap:
            shards.append(s)
        elif (n := swap[s.key]) is not None:
            shards.append(n)
    extra[EXTRA_KEY] = replace(state, shards=tuple(shards)).to_json()
    return True


def swap(lake: Lake, tenant: str, plan: Plan) -> Manifest | None:
    """Commit the plan onto the newest manifest; None when an object it replaces is gone from
    it (plan again)."""
    stale = False

    def build(latest: Snapshot) -> Manifest | None:
        nonlocal stale
        tables = dict(latest.manifest.tables)
        extra = dict(latest.manifest.extra)
        if not (_apply_segments(tables, plan) and _apply_shards(extra, plan)):
            stale = True
            return None
        extra[ERASURE_EPOCH] = int(extra.get(ERASURE_EPOCH, 0)) + 1
        return latest.manifest.next(tables, extra)

    try:
        manifest = lake.replace_segments(tenant, build)
    except Unavailable:
        return None
    return None if stale else manifest
