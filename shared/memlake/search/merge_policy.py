"""Which shards maintenance merges next (docs/decisions/2501, 2515): a pure policy over the
manifest's shard tuple, which memlake.search.merging carries out.

`plan` picks one run of adjacent shards, in this order:
- among the *settled* ones (up to the last tier-2-sized one: the write path never merges those
  again), the oldest FANOUT of one size class (tier 2 -> 3: 32,768 episodes; 3 -> 4 when
  `MergeRules.top` is 4);
- else the newest tier-2 shards once there are `settle` of them, with the partial tier-3 shard
  before them while the sum fits a tier 3 (so at most a partial and one fresh tier-2 shard
  wait behind the full ones);
- else the write path's newest tier-1 shards (512 episodes) folded into the partial tier-2
  shard before them while they fit, or into a new one once there are `settle` of them (the
  write path leaves up to seven, each searched on its own). The partial, while a tier-1 shard
  still fits in it, is not counted among the settled shards: it joins tier 3 once full;
- else one merged shard whose dead docs pass DEAD_FRACTION (writes never rebuild those:
  layout.maintained).
Adjacent because shards partition the commit versions (state.shard_of_seq bisects on seq[0]):
a merged shard covers its inputs' range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from memlake.search.index import layout
from memlake.search.index.state import ShardInfo


@dataclass(frozen=True)
class MergeRules:
    """The tiers maintenance builds: `top` (3: runs of tier-2 shards into 32,768 episodes;
    4: also runs of tier-3 shards), `fanout` shards of one size class per full merge, `base`
    docs in a full tier-2 shard, `settle` newest tier-2 shards merged before they are FANOUT
    (and newest tier-1 shards folded into a new partial tier-2 one; 0: full runs only).
    Tests pass small numbers; `for_tier` takes the write path's (layout)."""

    top: int = 3
    fanout: int = 8
    base: int = 4096
    settle: int = 2

    @classmethod
    def for_tier(cls, top: int) -> MergeRules:
        return cls(top, layout.FANOUT, layout.TAIL_DOCS * layout.FANOUT**layout.MAX_TIER)

    def capacity(self, level: int) -> float:
        """Docs of a full shard of size class `level` (2: a full tier-2 shard)."""
        return float(self.base * float(self.fanout) ** (level - layout.MAX_TIER))

    def level(self, info: ShardInfo) -> int:
        """Size class of a shard by its live docs: 2 up to `base`, 3 up to fanout x that..."""
        level = 0
        while info.live > self.capacity(level):
            level += 1
        return level


class Plan(NamedTuple):
    start: int  # shards[start:end] merge into one shard of `tier`
    end: int
    tier: int


def plan(
    shards: tuple[ShardInfo, ...], rules: MergeRules, blocked: frozenset[int] = frozenset()
) -> Plan | None:
    """The next run of `shards` to merge (None: nothing to do); shards at `blocked`
    positions (holding episodes whose vectors are pending, older formats) are never taken."""
    if rules.top <= layout.MAX_TIER:
        return None
    settled = 0  # shards[:settled] are past the write path's merges
    for i, s in enumerate(shards):
        if not s.tail and (s.tier >= layout.MAX_TIER or rules.level(s) >= layout.MAX_TIER):
            settled = i + 1
    ok = [i not in blocked and not s.tail and s.live > 0 for i, s in enumerate(shards)]
    # the newest settled shard, while a tier-1 shard still fits in it, is the partial tier-2
    # shard the folds fill (`_fold_run`): it joins the merges into tier 3 once it is full
    growing = settled - 1 if settled and _has_room(shards[settled - 1], rules) else None
    done = settled if growing is None else growing
    levels = [rules.level(s) for s in shards[:done]]
    for start in range(done):  # full runs, oldest first
        run = _full_run(levels, ok, start, rules)
        if run is not None:
            return run
    settle = _settle_run(shards, levels, ok, rules)
    if settle is not None:
        return settle
    fold = _fold_run(shards, settled, growing, ok, rules)
    if fold is not None:
        return fold
    for i in range(settled):  # merged shards the write path will not purge
        s = shards[i]
        if ok[i] and layout.maintained(s) and len(s.dead) > layout.DEAD_FRACTION * s.docs:
            return Plan(i, i + 1, max(s.tier, levels[i]))
    return None


def _settle_run(
    shards: tuple[ShardInfo, ...], levels: list[int], ok: list[bool], rules: MergeRules
) -> Plan | None:
    """The newest tier-2 shards (after the last bigger one or the last one a merge must not
    take; smaller ones among them ride along) once there are `rules.settle` of them, with
    that bigger one when it is a partial tier 3 they fit in; None otherwise."""
    top2 = layout.MAX_TIER
    last = max((i for i, level in enumerate(levels) if level > top2), default=-1)
    start = max([last + 1, *(i + 1 for i in range(last + 1, len(levels)) if not ok[i])])
    fresh = range(start, len(levels))
    if not rules.settle or sum(levels[i] == top2 for i in fresh) < rules.settle:
        return None
    live = sum(shards[i].live for i in fresh)
    partial = start == last + 1 and last >= 0 and ok[last] and levels[last] == top2 + 1
    if partial and shards[last].live + live <= rules.capacity(top2 + 1):
        return Plan(last, len(levels), top2 + 1)
    return Plan(start, len(levels), top2 + 1)


def _has_room(info: ShardInfo, rules: MergeRules) -> bool:
    """Whether a tier-1 shard's docs still fit in this tier-2-sized (or smaller) shard."""
    top2 = layout.MAX_TIER
    return (
        rules.level(info) <= top2
        and not layout.maintained(info)
        and info.live + rules.capacity(top2 - 1) <= rules.capacity(top2)
    )


def _fold_run(
    shards: tuple[ShardInfo, ...],
    settled: int,
    growing: int | None,
    ok: list[bool],
    rules: MergeRules,
) -> Plan | None:
    """The write path's newest tier-1 shards (right after the settled ones) folded into the
    partial tier-2 shard before them (`growing`) as many as fit, or, when none fits, into a
    new one once there are `rules.settle` of them; None otherwise. The write path would
    leave up to 7 of them (decision 2515)."""
    fresh = []
    for i in range(settled, len(shards)):
        if not ok[i] or shards[i].tier != 1:
            break
        fresh.append(i)
    room = 0.0
    if growing is not None and ok[growing]:
        room = rules.capacity(layout.MAX_TIER) - shards[growing].live
    fits = 0
    for i in fresh:
        if shards[i].live > room:
            break
        room -= shards[i].live
        fits += 1
    if fits:
        assert growing is not None
        return Plan(growing, fresh[fits - 1] + 1, layout.MAX_TIER)
    if rules.settle and len(fresh) >= rules.settle:
        return Plan(fresh[0], fresh[-1] + 1, layout.MAX_TIER)
    return None


def _full_run(levels: list[int], ok: list[bool], start: int, rules: MergeRules) -> Plan | None:
    """`rules.fanout` adjacent shards of one size class from `start` (smaller ones between
    them ride along), or None."""
    level = levels[start]
    if not ok[start] or not layout.MAX_TIER <= level < rules.top:
        return None
    count = 0
    for i in range(start, len(levels)):
        if not ok[i] or levels[i] > level:
            return None
        count += levels[i] == level
        if count == rules.fanout:
            return Plan(start, i + 1, level + 1)
    return None
