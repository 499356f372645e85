"""Which shards maintenance merges next (docs/decisions/2501, 2515): a pure policy over the
manifest's shard tuple, which memlake.search.merging carries out.

`plan` picks one run of adjacent shards, in this order:
- among the *settled* ones (up to the last tier-2-sized one: the write path never merges those
  again), the oldest FANOUT of one size class (tier 2 -> 3: 32,768 episodes; 3 -> 4 when
  `MergeRules.top` is 4);
- else the newest tier-2 shards once there are `settle` of them, with the partial tier-3 shard
  before them while the sum fits a tier 3 (so at most a partial and one fresh tier-2 shard
  wait behind the full ones);
- else the write path's tier-1 shards (512 episodes) folded into the partial tier-2 shard
  before them while they fit, or into a new one once there are `settle` of them; else its
  tier-0 shards (64) likewise into a partial tier-1 shard. The write path leaves up to seven
  of each, searched one by one (a tier-0 shard is flat: every row read). A partial shard,
  while one of the size below still fits in it, is not counted among the shards of its
  size: it joins the merge or fold above once full;
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
    # shard the folds fill (`_folds`): it joins the merges into tier 3 once it is full
    top2 = layout.MAX_TIER
    growing = settled - 1 if settled and _has_room(shards[settled - 1], rules, top2) else None
    done = settled if growing is None else growing
    levels = [rules.level(s) for s in shards[:done]]
    for start in range(done):  # full runs, oldest first
        run = _full_run(levels, ok, start, rules)
        if run is not None:
            return run
    settle = _settle_run(shards, levels, ok, rules)
    if settle is not None:
        return settle
    fold = _folds(shards, settled, growing, ok, rules)
    if fold is not None:
        return fold
    for i in range(done):  # merged shards the write path will not purge (never `growing`)
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


def _has_room(info: ShardInfo, rules: MergeRules, tier: int) -> bool:
    """Whether a shard of tier - 1's size still fits in this one of up to `tier`'s size."""
    return (
        rules.level(info) <= tier
        and not layout.maintained(info)
        and info.live + rules.capacity(tier - 1) <= rules.capacity(tier)
    )


def _folds(
    shards: tuple[ShardInfo, ...],
    settled: int,
    growing: int | None,
    ok: list[bool],
    rules: MergeRules,
) -> Plan | None:
    """The write path's tier-1 shards after the settled ones folded into a partial tier-2
    shard (`growing`, or a new one), else its tier-0 shards after those into a partial tier-1
    one; None when neither is due. The write path alone leaves up to 7 of each."""
    ones = settled
    while ones < len(shards) and shards[ones].tier == 1 and not shards[ones].tail:
        ones += 1
    # the last tier-1 shard, while a tier-0 one still fits in it, is the partial tier-1 shard
    # the tier-0 folds fill: it joins a tier-2 fold once it is full
    partial = ones - 1 if ones > settled and _has_room(shards[ones - 1], rules, 1) else None
    full = range(settled, ones if partial is None else partial)
    fold = _fold(shards, full, growing, ok, rules, layout.MAX_TIER, 1)
    if fold is not None:
        return fold
    zeros = ones
    while zeros < len(shards) and shards[zeros].tier == 0 and not shards[zeros].tail:
        zeros += 1
    # tier-0 shards come 8 times as often, and a fold's cost is mostly the partial's codes
    # trained anew (~1 s): they fold `settle` at a time, unless one fills the partial
    return _fold(shards, range(ones, zeros), partial, ok, rules, 1, rules.settle)


def _fold(
    shards: tuple[ShardInfo, ...],
    fresh: range,
    growing: int | None,
    ok: list[bool],
    rules: MergeRules,
    tier: int,
    least: int,
) -> Plan | None:
    """The `fresh` shards (up to the first a merge must not take) folded into the partial
    shard of `tier` right before them (`growing`) as many as fit, once `least` fit or they
    fill it; when none fits, into a new one once there are `rules.settle` of them; None
    otherwise."""
    taken = []
    for i in fresh:
        if not ok[i]:
            break
        taken.append(i)
    room = 0.0
    if growing is not None and ok[growing]:
        room = rules.capacity(tier) - shards[growing].live
    fits = 0
    for i in taken:
        if shards[i].live > room:
            break
        room -= shards[i].live
        fits += 1
    if fits and (fits >= least or room < rules.capacity(tier - 1)):
        assert growing is not None
        return Plan(growing, taken[fits - 1] + 1, tier)
    if fits:
        return None
    if rules.settle and len(taken) >= rules.settle:
        return Plan(taken[0], taken[-1] + 1, tier)
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
