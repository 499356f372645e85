"""Maintenance's merge policy (memlake.search.merge_policy.plan, docs/decisions/2501, 2515):
which run of adjacent shards becomes one, over the manifest's shard tuple alone."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from memlake.search.index import layout
from memlake.search.index.state import ShardInfo
from memlake.search.merge_policy import MergeRules, Plan, plan
from tests.bench import scale_tenant

RULES = MergeRules.for_tier(3)


def stub(docs: int, tier: int, *, tail: bool = False, dead: int = 0, key: str = "") -> ShardInfo:
    gone = tuple(f"d{i}" for i in range(dead))
    return ShardInfo(key, docs, docs, docs, (0, 0), (0, 0), (), False, gone, tier, tail)


def write_path(tier2: int, tier1: int = 0, tier0: int = 0) -> tuple[ShardInfo, ...]:
    """Shards as the write path leaves them: tier-2, tier-1, tier-0 shards and a tail."""
    sizes = [(4096, 2)] * tier2 + [(512, 1)] * tier1 + [(64, 0)] * tier0
    shards = [stub(d, t, key=f"k{i}") for i, (d, t) in enumerate(sizes)]
    return (*shards, stub(10, 0, tail=True, key="tail"))


def test_the_oldest_eight_tier_2_shards_merge_into_a_tier_3_one() -> None:
    shards = write_path(10, 3, 2)
    assert plan(shards, RULES) == Plan(0, 8, 3)


def test_a_tenant_of_100k_episodes_settles_on_three_full_tier_3_shards() -> None:
    # GIVEN what the write path leaves at 100k episodes: 24 tier-2 shards, 3 + 2 small, a tail
    shards = write_path(24, 3, 2)
    # WHEN maintenance merges until nothing is left to do (a single pass, as after an import)
    while (run := plan(shards, RULES)) is not None:
        docs = sum(s.live for s in shards[run.start : run.end])
        shards = (*shards[: run.start], stub(docs, run.tier), *shards[run.end :])
    # THEN three shards of 32,768 episodes hold 98% of them, the three tier-1 shards are
    # folded into one partial tier-2 shard and the two tier-0 ones into a partial tier-1 one
    assert [(s.docs, s.tier) for s in shards[:3]] == [(32768, 3)] * 3
    assert [(s.docs, s.tier) for s in shards[3:-1]] == [(1536, 2), (128, 1)]
    assert shards[-1].tail


def test_as_a_tenant_grows_at_most_one_partial_and_one_fresh_tier_2_shard_wait() -> None:
    """Maintenance after every commit of 64 (the serve tick), up to 300k episodes: the shards
    of 4,096+ episodes are full tier-3 ones, then at most a partial one and one tier-2 one."""
    for n in range(4096, 300_001, 4096 * 3 + 448):
        big = [p for p in scale_tenant.layout(n) if p.docs >= 4096]
        full = [p for p in big if p.docs == 32768]
        assert big[: len(full)] == full, n
        assert len(big) - len(full) <= 2, (n, [p.docs for p in big])
        assert all(p.tier == 3 for p in full)


def test_as_a_tenant_grows_at_most_six_shards_follow_the_full_tier_3_ones() -> None:
    """Maintenance after every commit of 64, up to 140k episodes: the write path's tier-1
    shards fold into a partial tier-2 shard and its tier-0 ones into a partial tier-1 one, so
    at most a partial tier-3 shard, a tier-2 one, a partial tier-2 one, a tier-1 one, a
    partial tier-1 one and the tail follow the full tier-3 shards (one tier-0 shard waits in
    place of the partial tier-1 one), where the write path alone leaves up to 7 tier-1 and 7
    tier-0 shards."""
    for n in [*range(64, 140_001, 512 * 3 + 64), *range(20_000, 20_600, 64)]:
        held = scale_tenant.layout(n)
        shape = (n, [(p.docs, p.tier) for p in held])
        assert len([p for p in held if p.docs < 32768]) <= 6, shape
        assert sum(p.tier == 1 for p in held) <= 2, shape
        assert sum(p.tier == 0 and not p.tail for p in held) <= 1, shape
        assert sum(p.tier == 2 and p.docs < 4096 for p in held) <= 1, shape  # one partial
    # at 20,000 episodes in commits of 64: 16,384 + 3,584 + a tail of 32, not 9 shards
    assert [(p.docs, p.tier) for p in scale_tenant.layout(20_000)] == [
        (16384, 3), (3584, 2), (32, 0),
    ]  # fmt: skip


def test_the_newest_tier_2_shards_settle_into_a_partial_shard_that_grows() -> None:
    full = [stub(32768, 3, key="f")]
    two = write_path(2, 1)
    assert plan((*full, *two), RULES) == Plan(1, 3, 3)  # not the full shard: they would not fit
    partial = stub(6 * 4096, 3, key="p")
    assert plan((*full, partial, *write_path(2)), RULES) == Plan(1, 4, 3)  # it grows to full
    # one fresh tier-2 shard waits for a second; so does one that would overflow the partial
    assert plan((*full, partial, *write_path(1)), RULES) is None
    assert plan((stub(30000, 3), *write_path(2)), RULES) == Plan(1, 3, 3)


def test_the_write_paths_tier_1_shards_fold_into_a_partial_tier_2_shard_that_grows() -> None:
    full = stub(32768, 3, key="f")
    # two tier-1 shards start a partial tier-2 shard; one alone waits (it is one already)
    assert plan((full, *write_path(0, 2, 3)), RULES) == Plan(1, 3, 2)
    assert plan((full, *write_path(0, 1, 1)), RULES) is None
    # the partial takes each new one while it fits: the first of two, then none
    partial = stub(3584, 2, key="p")
    assert plan((full, partial, *write_path(0, 1, 3)), RULES) == Plan(1, 3, 2)
    assert plan((full, partial, *write_path(0, 2)), RULES) == Plan(1, 3, 2)
    filled = stub(4096, 2, key="p")
    assert plan((full, filled, *write_path(0, 1)), RULES) is None
    assert plan((full, filled, *write_path(0, 2)), RULES) == Plan(2, 4, 2)
    # never the tail, a tier-0 shard, a blocked one or what follows it
    assert plan((full, partial, *write_path(0, 0, 7)), RULES) == Plan(2, 9, 1)  # (tier 0: 1)
    shards = (full, stub(1024, 2, key="p"), *write_path(0, 3))
    assert plan(shards, RULES, blocked=frozenset({3})) == Plan(1, 3, 2)
    assert plan(shards, RULES, blocked=frozenset({1})) == Plan(2, 5, 2)  # a new partial
    assert plan(shards, replace(RULES, settle=0)) == Plan(1, 5, 2)
    assert plan(write_path(0, 2), replace(RULES, settle=0)) is None


def test_the_write_paths_tier_0_shards_fold_into_a_partial_tier_1_shard_that_grows() -> None:
    full, tier2 = stub(32768, 3, key="f"), stub(1024, 2, key="p")
    # two tier-0 shards start a partial tier-1 shard; one alone waits
    assert plan((full, *write_path(0, 0, 2)), RULES) == Plan(1, 3, 1)
    assert plan((full, *write_path(0, 0, 1)), RULES) is None
    # the partial takes them two at a time while they fit (8x as many folds as of tier-1
    # shards, each training the partial's codes), or one that fills it
    assert plan((full, tier2, stub(128, 1, key="q"), *write_path(0, 0, 2)), RULES) == Plan(2, 5, 1)
    assert plan((full, tier2, stub(128, 1, key="q"), *write_path(0, 0, 1)), RULES) is None
    assert plan((full, tier2, stub(448, 1, key="q"), *write_path(0, 0, 2)), RULES) == Plan(2, 4, 1)
    assert plan((full, tier2, stub(448, 1, key="q"), *write_path(0, 0, 1)), RULES) == Plan(2, 4, 1)
    # while one still fits, it is not among the tier-1 shards a tier-2 fold takes; full, it is
    growing = (full, tier2, stub(256, 1, key="q"), *write_path(0))
    assert plan(growing, RULES) is None
    assert plan((full, tier2, stub(512, 1, key="q"), *write_path(0)), RULES) == Plan(1, 3, 2)


def test_a_partial_tier_2_shard_joins_a_tier_3_merge_only_once_full() -> None:
    tier3 = stub(16384, 3, key="t")
    # a growing partial does not count among the newest tier-2 shards: tier 3 is rewritten
    # when a full one joins, not at every fold
    tier2, tail = write_path(1)
    assert plan((tier3, tier2, stub(1024, 2, key="p"), tail), RULES) is None
    assert plan((tier3, tier2, stub(4096, 2, key="p"), tail), RULES) == Plan(0, 3, 3)
    # nor does it ride along in a full run
    shards = (*write_path(8)[:-1], stub(2048, 2, key="p"), *write_path(0, 1))
    assert plan(shards, RULES) == Plan(0, 8, 3)


def test_runs_are_adjacent_and_never_take_the_tail_or_the_write_paths_small_shards() -> None:
    shards = write_path(7, 1, 7)
    assert plan(shards, replace(RULES, settle=0)) is None  # 7 < FANOUT, tiers 0/1 are writes'
    assert plan(shards, RULES) == Plan(0, 7, 3)
    # a shard left small by deletions between tier-2 ones rides along in the run
    rider = stub(300, 1, key="r")
    shards = (*write_path(4)[:-1], rider, *write_path(4))
    assert plan(shards, RULES) == Plan(0, 9, 3)


def test_blocked_shards_break_runs() -> None:
    shards = write_path(8)
    assert plan(shards, RULES, blocked=frozenset({3})) == Plan(4, 8, 3)  # the newest settle
    assert plan(shards, RULES, blocked=frozenset({3, 7})) is None


def test_tier_4_only_when_allowed() -> None:
    shards = (*(stub(32768, 3, key=f"f{i}") for i in range(8)), *write_path(0, 1))
    assert plan(shards, RULES) is None
    assert plan(shards, MergeRules.for_tier(4)) == Plan(0, 8, 4)
    assert plan(write_path(16), MergeRules.for_tier(layout.MAX_TIER)) is None  # merges off


def test_a_merged_shard_past_the_dead_fraction_is_purged_by_maintenance_alone() -> None:
    gone = stub(32768, 3, dead=9000, key="g")
    assert layout.maintained(gone) and not layout.needs_purge(gone)  # writes never rebuild it
    assert plan((gone, *write_path(1)), RULES) == Plan(0, 1, 3)
    assert plan((replace(gone, dead=gone.dead[:8000]), *write_path(1)), RULES) is None


@pytest.mark.parametrize("n", [3, 4096, 9000, 40_000])
def test_the_bench_layout_holds_every_episode_once(n: int) -> None:
    planned = scale_tenant.layout(n)
    assert sum(p.docs for p in planned) == n
    assert all(sum(p.parts) == p.docs for p in planned if p.parts)
    assert planned[-1].tail and not any(p.tail for p in planned[:-1])
    # a tier-3 shard keeps the lists of what it merged: tier-2 shards of 4,096 episodes that
    # folds made of the write path's shards (built one by one: the parts)
    for p in planned:
        assert sum(p.groups) == (len(p.parts) if p.tier == 3 else 0)
        ends = list(itertools.accumulate(p.groups))
        assert all(sum(p.parts[a:b]) == 4096 for a, b in itertools.pairwise([0, *ends]))
