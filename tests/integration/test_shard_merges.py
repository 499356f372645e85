"""Maintenance merges index shards off the write path (memlake.search.merging, decisions 2501
and 2515): search finds the same before and after, deletes and updates made while a merge
builds are kept, a merge whose inputs changed gives up, a kill at any point loses nothing, the
write path's tier-1 shards fold into a partial tier-2 one, and the maintenance doors run it
within their bounds. Tiers are shrunk: a tier-2 shard holds 16 episodes, a tier-3 one 32."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import memlake
from memlake.config import Settings
from memlake.lake import Lake, Transaction
from memlake.lake.gc import collect_garbage
from memlake.maintenance import maintain_tenant, maintenance_policy
from memlake.search.hybrid import search
from memlake.search.index import ivf, layout
from memlake.search.merge_policy import MergeRules
from memlake.search.merging import merge_shards
from memlake.search.query.params import SearchParams
from memlake.tools import delete_episode
from tests.integration.test_search_index import HashEmbedder, T, make, put, state

VEC_ONLY = SearchParams(weights={"bm25": 0.0, "vector": 1.0})
REAL_MERGE = layout.Layout.merge
ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(memlake.__file__).resolve().parents[1]


@pytest.fixture
def rules(monkeypatch: pytest.MonkeyPatch) -> MergeRules:
    """The write path's tiers of 4, 8 and 16 episodes; maintenance's tier 3 of 32."""
    monkeypatch.setattr(layout, "TAIL_DOCS", 4)
    monkeypatch.setattr(layout, "FANOUT", 2)
    monkeypatch.setattr(ivf, "WEIGHT_DOCS", 16)
    return MergeRules.for_tier(3)


def fill(lake: Lake, n: int, start: int = 0) -> list[str]:
    """Episodes start..n-1 of five words each (every shard has the same average length, so
    BM25 scores do not move when shards merge), written TAIL_DOCS per commit as a busy writer
    would."""
    ids = [f"ep{i:03d}" for i in range(n)]
    for first in range(start, n, layout.TAIL_DOCS):

        def change(txn: Transaction, first: int = first) -> None:
            for i in range(first, min(n, first + layout.TAIL_DOCS)):
                row = {"id": ids[i], "content": f"topic{i % 5} item{i} note{i % 7} shared words"}
                txn.put("episodes", {**row, "created_at": None})

        lake.commit(T, change)
    return ids


def hits(ctx: Any, query: str, **kw: Any) -> dict[str, float]:
    got = search(ctx.lake, ctx.services.search, T, query=query, limit=50, recency=False, **kw)
    return {h.id: h.score for h in got}


def shape(lake: Lake) -> list[tuple[int, int]]:
    return [(s.docs, s.tier) for s in state(lake).shards]


def test_search_finds_the_same_before_and_after_a_merge(tmp_path: Path, rules: MergeRules) -> None:
    # GIVEN 36 episodes: two tier-2 shards of the write path, then its smaller ones
    lake, ctx = make(tmp_path, HashEmbedder())
    ids = fill(lake, 36)
    assert shape(lake)[:2] == [(16, 2), (16, 2)]
    queries = ["item3", "topic2 note4", "shared words", "item30 topic1", "note6 item17"]
    before = [(hits(ctx, q), hits(ctx, q, params=VEC_ONLY)) for q in queries]
    # WHEN maintenance merges
    report = merge_shards(lake, T, rules=rules)
    # THEN one tier-3 shard holds their 32 episodes, in their commit range
    assert (report.merged, report.shards_in, report.docs) == (1, 2, 32)
    assert shape(lake)[0] == (32, 3)
    assert state(lake).shards[0].seq[1] + 1 == state(lake).shards[1].seq[0]
    # AND every search finds the same episodes with the same scores
    for (hybrid, vector), q in zip(before, queries, strict=True):
        for old, new in ((hybrid, hits(ctx, q)), (vector, hits(ctx, q, params=VEC_ONLY))):
            assert new.keys() == old.keys()
            assert all(new[i] == pytest.approx(old[i], abs=1e-5) for i in old)
    assert all(next(iter(hits(ctx, f"item{i}"))) == ids[i] for i in range(36))
    assert merge_shards(lake, T, rules=rules).merged == 0  # nothing left to do


def test_the_write_paths_small_shards_fold_into_partial_shards_that_fill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fanout 4: tiers of 4, 16 and 64 episodes, so the write path leaves up to three tier-1
    and three tier-0 shards, each searched on its own; maintenance folds them (decision 2515)."""
    monkeypatch.setattr(layout, "TAIL_DOCS", 4)
    monkeypatch.setattr(layout, "FANOUT", 4)
    monkeypatch.setattr(ivf, "WEIGHT_DOCS", 64)
    rules = MergeRules.for_tier(3)
    # GIVEN 60 episodes: three tier-1 shards, two tier-0 ones and the tail
    lake, ctx = make(tmp_path, HashEmbedder())
    ids = fill(lake, 60)
    assert shape(lake) == [(16, 1)] * 3 + [(4, 0)] * 3
    queries = ["item3", "topic2 note4", "shared words", "item30 topic1", "note6 item57"]
    before = [(hits(ctx, q), hits(ctx, q, params=VEC_ONLY)) for q in queries]
    # WHEN maintenance runs: a partial tier-2 shard holds the tier-1 shards' 48 episodes,
    # then a partial tier-1 shard the tier-0 ones' 8
    for done, folded in (((1, 3, 48), [(48, 2), (4, 0), (4, 0), (4, 0)]), ((1, 2, 8), None)):
        report = merge_shards(lake, T, rules=rules, limit=1)
        assert (report.merged, report.shards_in, report.docs) == done
        assert shape(lake) == (folded or [(48, 2), (8, 1), (4, 0)])
        # THEN every search finds the same episodes with the same scores
        for (hybrid, vector), q in zip(before, queries, strict=True):
            for old, new in ((hybrid, hits(ctx, q)), (vector, hits(ctx, q, params=VEC_ONLY))):
                assert new.keys() == old.keys()
                assert all(new[i] == pytest.approx(old[i], abs=1e-5) for i in old)
    # AND as the write path goes on, maintenance after each commit (the tick) fills the
    # partial tier-1 shard, which then fills the partial tier-2 one
    for end in (64, 68):
        ids = fill(lake, end, start=end - 4)
        merge_shards(lake, T, rules=rules)
    assert shape(lake) == [(64, 2), (4, 0)]
    assert all(next(iter(hits(ctx, f"item{i}"))) == ids[i] for i in range(68))
    assert merge_shards(lake, T, rules=rules).merged == 0  # a full tier-2 shard alone waits


def test_a_shard_holding_episodes_with_pending_vectors_waits(
    tmp_path: Path, rules: MergeRules
) -> None:
    """The deferred pass rebuilds the shard holding an episode whose vectors it embeds
    (Layout.reindex, inside its commit): merged, that shard would be 32,768 episodes."""
    lake, _ = make(tmp_path, HashEmbedder())
    ids = fill(lake, 36)

    def pending(count: int) -> Any:
        def change(txn: Transaction) -> None:
            doc = txn.extra["search"]
            doc["pending"] = {ids[2]: count} if count else {}

        return change

    lake.commit(T, pending(3))
    assert merge_shards(lake, T, rules=rules).merged == 0
    lake.commit(T, pending(0))  # embedded meanwhile
    assert merge_shards(lake, T, rules=rules).merged == 1


def _during_build(monkeypatch: pytest.MonkeyPatch, act: Any) -> None:
    """Run `act` after the merged shard is built and written, before it is swapped in."""
    real = layout.Layout.merge

    def merge(self: layout.Layout, parts: Any, tier: int) -> Any:
        merged = real(self, parts, tier)
        act()
        return merged

    monkeypatch.setattr(layout.Layout, "merge", merge)


def test_deletes_and_updates_made_while_a_merge_builds_stay_made(
    tmp_path: Path, rules: MergeRules, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    ids = fill(lake, 36)
    before = state(lake)

    def writes() -> None:  # a delete and an update of episodes in the merge's inputs
        delete_episode.run(ctx, delete_episode.DeleteEpisodeInput(id=ids[3]))
        put(lake, "rewritten heron quarry lantern", episode_id=ids[20])

    _during_build(monkeypatch, writes)
    assert merge_shards(lake, T, rules=rules).merged == 1
    merged = state(lake).shards[0]
    assert merged.key not in {s.key for s in before.shards}
    assert set(merged.dead) == {ids[3], ids[20]}  # carried into the merged shard
    assert ids[3] not in hits(ctx, "item3") and ids[3] not in hits(ctx, "x", params=VEC_ONLY)
    assert ids[20] not in hits(ctx, "item20")  # its old text is gone...
    assert list(hits(ctx, "heron quarry lantern"))[:1] == [ids[20]]  # ...its new one found once
    assert all(next(iter(hits(ctx, f"item{i}"))) == ids[i] for i in range(36) if i not in (3, 20))


def test_a_merge_whose_inputs_changed_gives_up_and_the_next_run_merges(
    tmp_path: Path, rules: MergeRules, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    ids = fill(lake, 36)
    before, old = state(lake), _unnamed_shard_objects(lake)

    def purge() -> None:  # 5 of the first shard's 16 episodes deleted: the write path rebuilds it
        for i in range(5):
            delete_episode.run(ctx, delete_episode.DeleteEpisodeInput(id=ids[i]))

    _during_build(monkeypatch, purge)
    report = merge_shards(lake, T, rules=rules)
    assert (report.merged, report.gave_up) == (0, 1)
    assert shape(lake)[:2] == [(11, 2), (16, 2)]  # the purged input, the other untouched
    orphans = _unnamed_shard_objects(lake) - old - {s.key for s in before.shards}
    assert len(orphans) == 1  # the merged object, named by no manifest: GC's
    later = datetime.now(UTC) + timedelta(hours=1)
    collect_garbage(lake, T, grace_seconds=900, now=later)
    assert not _unnamed_shard_objects(lake) & orphans
    monkeypatch.setattr(layout.Layout, "merge", REAL_MERGE)
    assert merge_shards(lake, T, rules=rules).merged == 1
    assert shape(lake)[0] == (27, 3)
    assert all(next(iter(hits(ctx, f"item{i}"))) == ids[i] for i in range(5, 36))


def _unnamed_shard_objects(lake: Lake) -> set[str]:
    named = {s.key for s in state(lake).shards}
    return {o.key for o in lake.store.list(f"tenants/{T}/search/")} - named


def test_writes_never_rebuild_a_merged_shard_maintenance_purges_it(
    tmp_path: Path, rules: MergeRules
) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    ids = fill(lake, 36)
    merge_shards(lake, T, rules=rules)
    key = state(lake).shards[0].key
    for i in range(12):  # 37% of the merged shard's episodes
        delete_episode.run(ctx, delete_episode.DeleteEpisodeInput(id=ids[i]))
    assert state(lake).shards[0].key == key and len(state(lake).shards[0].dead) == 12
    assert merge_shards(lake, T, rules=rules).merged == 1
    assert [(s.docs, s.dead) for s in state(lake).shards[:1]] == [(20, ())]
    assert all(next(iter(hits(ctx, f"item{i}"))) == ids[i] for i in range(12, 36))


def _run_killed(root: Path, point: str) -> int:
    """`merge_shards` in a child process on the same lake, SIGKILLed at `point`: "build" (after
    the first input is copied into the merged shard), "written" (the merged object is in the
    store, the manifest not yet)."""
    code = f"""
import os, signal, sys
from memlake.search import merging
from memlake.search.merge_policy import MergeRules
from memlake.search.index import layout
from memlake.store.local import LocalStore
from tests.wiring import bare_lake

def die():
    os.kill(os.getpid(), signal.SIGKILL)

if {point!r} == "build":
    real = layout._drain
    def drain(items):
        it = real(items)
        yield next(it)
        die()
    layout._drain = drain
else:
    put = LocalStore.put
    def dying_put(self, key, data, **kw):
        put(self, key, data, **kw)
        if "/search/" in key:
            die()
    LocalStore.put = dying_put
lake = bare_lake(LocalStore(sys.argv[1]), dim=64)
merging.merge_shards(lake, {T!r}, rules=MergeRules(3, 2, 16))
print("not killed")
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SHARED), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)], env=env, capture_output=True, text=True
    )
    assert "not killed" not in done.stdout, done.stderr
    return done.returncode


@pytest.mark.parametrize("point", ["build", "written"])
def test_a_merge_killed_midway_loses_nothing_and_a_later_run_completes_it(
    tmp_path: Path, rules: MergeRules, point: str
) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    ids = fill(lake, 36)
    before, old = state(lake), _unnamed_shard_objects(lake)  # old tails: older manifests'
    # WHEN a maintenance process is killed in the middle of a merge
    assert _run_killed(tmp_path, point) == -signal.SIGKILL
    # THEN the manifest still names the old shards, which serve every episode
    assert state(lake) == before
    orphans = _unnamed_shard_objects(lake) - old
    assert len(orphans) == (point == "written")
    assert all(next(iter(hits(ctx, f"item{i}"))) == ids[i] for i in range(36))
    # AND writes go on, and the next maintenance run merges
    new = put(lake, "written after the kill")
    assert next(iter(hits(ctx, "written after the kill"))) == new
    assert merge_shards(lake, T, rules=rules).merged == 1
    assert shape(lake)[0] == (32, 3)
    assert all(next(iter(hits(ctx, f"item{i}"))) == ids[i] for i in range(36))
    later = datetime.now(UTC) + timedelta(hours=1)
    collect_garbage(lake, T, grace_seconds=900, now=later)
    assert not _unnamed_shard_objects(lake) & orphans  # no manifest ever named the object


def test_maintenance_merges_within_each_doors_bounds(tmp_path: Path, rules: MergeRules) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    fill(lake, 68)  # four tier-2 shards: two merges of tier 3 are due
    services = ctx.services
    tick = maintenance_policy(Settings(), "tick")
    scheduled = maintenance_policy(Settings(), "scheduled")
    assert (tick.merge_tier, tick.merge_limit, scheduled.merge_limit) == (3, 1, None)
    assert maintenance_policy(Settings(shard_merge_tier=2), "tick").merge_tier == 2
    assert maintenance_policy(Settings(), "operator").merge_tier == 0  # compact / gc: one step
    # a merge that would pass the deadline, or the memory bound, waits for a later run
    late = maintain_tenant(services, T, scheduled, deadline=0.0).merged
    assert late is not None and (late.merged, late.deferred) == (0, 1)
    small = maintain_tenant(services, T, replace(scheduled, merge_memory=1)).merged
    assert small is not None and small.deferred == 1
    assert [t for _, t in shape(lake)][:4] == [2, 2, 2, 2]
    # the tick merges one run per pass; the scheduled pass all that are due
    one = maintain_tenant(services, T, tick).merged
    assert one is not None and one.merged == 1
    assert maintain_tenant(services, T, scheduled).merged.merged == 1  # type: ignore[union-attr]
    assert [t for _, t in shape(lake)][:2] == [3, 3]
