"""Merges of index shards, off the write path: tiers 3 and 4, and folds of the write path's
small shards into partial ones (docs/decisions/2501, 2515).

The write path (memlake.search.index.layout) builds shards up to tier 2 (4,096 episodes) inside
its commits, so a tenant of 100k episodes holds ~24 tier-2 shards, and every search pays each
shard's fixed work. Maintenance (memlake.maintenance: the serve tick, the scheduled Lambda,
`memlake maintain`) merges runs of them here, never inside a request:

- `memlake.search.merge_policy.plan` (pure, over the manifest's shard tuple) picks one run of
  adjacent shards: tier-2 shards into tier 3 (and 3 into 4 where allowed), or the write
  path's tier-1 or tier-0 shards folded into a partial shard of the tier above (decision
  2515), or a merged shard rebuilt without its dead docs.
- `merge_shards` builds the merged shard outside any lock from a snapshot's shards
  (Layout.merge: dead docs dropped, nothing re-embedded; above tier 2 the IVF the union of
  the inputs', not re-trained), writes its object under a new key (create-exclusive), then
  swaps it in by compare-and-swap (Lake.replace_segments, as compaction): against the newest
  manifest of every attempt, only if the inputs are still there with the same keys. Deletes
  and updates meanwhile only add ids to the inputs' `dead` lists: those ids move to the
  merged shard's `dead`. Inputs rebuilt or merged by someone else: this round gives up, its
  object is garbage for GC. A crash anywhere before the swap leaves the old shards named and
  serving.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

from memlake.episodes import TABLE
from memlake.errors import Unavailable
from memlake.lake import Lake, Snapshot
from memlake.lake.manifest import Manifest
from memlake.search.index import backlog, layout
from memlake.search.index.cache import ShardCache
from memlake.search.index.state import EXTRA_KEY, SearchState, ShardInfo
from memlake.search.merge_policy import MergeRules, plan

log = logging.getLogger("memlake.search.merging")
#: a merge's wall time and peak memory per byte of its input shard objects, to leave one that
#: would pass a deadline or a memory bound for later (tier-3 merges measured 0.019-0.026 s/MB
#: on one shared core and 2.3x their inputs' bytes: docs/performance.md; with a margin)
SECONDS_PER_MB = 0.04
MEMORY_PER_BYTE = 2.6


@dataclass
class MergeReport:
    merged: int = 0  # merges swapped in
    shards_in: int = 0  # shards they replaced
    docs: int = 0  # live docs they wrote
    seconds: float = 0.0
    gave_up: int = 0  # merges whose inputs changed before the swap (objects left to GC)
    deferred: int = 0  # merges due but not started: they would pass the deadline


def blocked_positions(snap: Snapshot, state: SearchState) -> frozenset[int]:
    """Shards a merge must leave alone: those holding an episode whose vectors are pending
    (the catch-up rebuilds that shard when they are embedded: memlake.search.catchup) and
    those of an older format (upgraded first: memlake.search.backfill)."""
    out = {i for i, s in enumerate(state.shards) if layout.outdated(s)}
    pending = backlog.pending_map(snap)  # the vector_backlog table (and a legacy map)
    if pending:
        episodes = snap.table(TABLE)
        for episode_id in pending:
            loc = episodes.locate(episode_id)
            pos = state.shard_of_seq(loc.seq) if loc is not None else None
            if pos is not None:
                out.add(pos)
    return frozenset(out)


def estimate(inputs: tuple[ShardInfo, ...]) -> tuple[float, int]:
    """(seconds, peak bytes of memory) a merge of `inputs` takes, by their objects' bytes."""
    size = sum(s.bytes for s in inputs)
    return SECONDS_PER_MB * size / 1e6, int(MEMORY_PER_BYTE * size)


def merge_shards(
    lake: Lake,
    tenant: str,
    *,
    rules: MergeRules,
    limit: int | None = None,
    deadline: float | None = None,
    memory: int | None = None,
) -> MergeReport:
    """Merge runs of the tenant's settled shards (`plan`), one commit each, up to `limit`
    merges; a merge that would pass `deadline` (time.monotonic()) or take more than `memory`
    bytes by its estimate is not started. Stops at the first merge whose inputs changed
    meanwhile (the next run retries)."""
    report = MergeReport()
    while limit is None or report.merged + report.gave_up < limit:
        snap = lake.snapshot(tenant)
        state = SearchState.from_extra(snap.extra)
        if state is None:
            return report
        if plan(state.shards, rules) is None:  # the usual answer, without reading a table
            return report
        picked = plan(state.shards, rules, blocked_positions(snap, state))
        if picked is None:
            return report
        inputs = state.shards[picked.start : picked.end]
        seconds, peak = estimate(inputs)
        late = deadline is not None and time.monotonic() + seconds > deadline
        if late or (memory is not None and peak > memory):
            report.deferred += 1
            return report
        t0 = time.monotonic()
        cache = ShardCache(0)  # not the searcher's: a merged shard would evict its whole set
        try:
            writer = layout.Layout(cache, lake.store, tenant, snap.version, state.model)
            merged = writer.merge(list(inputs), picked.tier)
        finally:
            cache.clear()  # a cached shard and its cache refer to each other: free it now
        swapped = _swap(lake, tenant, inputs, merged)
        took = time.monotonic() - t0
        log.info(
            "tenant %s: %s %d shards (%d docs) into tier %d in %.1f s",
            tenant,
            "merged" if swapped else "gave up merging",
            len(inputs),
            merged.docs,
            picked.tier,
            took,
        )
        report.seconds += took
        if not swapped:
            report.gave_up += 1
            return report
        report.merged += 1
        report.shards_in += len(inputs)
        report.docs += merged.docs
    return report


def _swap(lake: Lake, tenant: str, inputs: tuple[ShardInfo, ...], merged: ShardInfo) -> bool:
    """Put `merged` in place of `inputs` in the newest manifest, if they are all still there
    (same keys, adjacent); ids they marked dead since become dead in `merged`."""
    keys = [s.key for s in inputs]

    def build(latest: Snapshot) -> Manifest | None:
        state = SearchState.from_extra(latest.extra)
        if state is None:
            return None
        now = [s.key for s in state.shards]
        if keys[0] not in now:
            return None
        at = now.index(keys[0])
        current = state.shards[at : at + len(inputs)]
        if [s.key for s in current] != keys:
            return None
        dead = tuple(
            d
            for old, new in zip(inputs, current, strict=True)
            for d in new.dead
            if d not in set(old.dead)  # dropped by the merge; the others are in it, live
        )
        shards = (*state.shards[:at], replace(merged, dead=dead), *state.shards[at + len(inputs) :])
        extra = {**latest.extra, EXTRA_KEY: replace(state, shards=shards).to_json()}
        return latest.manifest.next(dict(latest.manifest.tables), extra)

    try:
        return lake.replace_segments(tenant, build) is not None
    except Unavailable:  # lost every race to writers: the next run tries again
        return False
