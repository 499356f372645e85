"""A user's search through /mcp with the probe plan from int8 centroids (decision 2507): on the
local lake and on S3 over real HTTP (moto's server), a tenant of several sealed IVF shards
answers every query the same whether the plan ranks the centroids' float32 or int8 copies.

A plan is made across two or more IVF shards (sides.probe_plans), and the int8 copies are used
from ivf.PLAN_INT8_FROM centroids, which a real tenant reaches at ~13k episodes. Here the sizes
are shrunk in-process as in test_search_cold_ranged (an IVF from 64 rows, 8 a list), so ~50
episodes of real MiniLM passages make three sealed IVF shards (PQ-coded, as real ones are), and
the threshold is lowered. The same world shows each row's gain (decision 2508) written through
/mcp and applied by a fresh server's searches, the BM25 floor across shards (decision 2509)
given to the shards' kernels with the same answers as without it, the re-score's cutoff over
few shards (decision 2510) keeping its share of the candidates, a shard's candidates
re-scored early on its task's thread (decision 2511) with the same answers, and the hits'
rows read without pyarrow scalars for null cells and UTC timestamps giving the same tool
output."""

from __future__ import annotations

from typing import Any

import pytest

from memlake.lake import rows
from memlake.search.index import ivf, ivf_coarse, ivf_codes
from memlake.search.index.shard import Shard
from memlake.search.index.state import SearchState
from memlake.search.query import sides

from .conftest import TOKENS
from .mcp_helpers import connect, run
from .test_search_cold_ranged import (
    NEEDLE,
    TAIL,
    TENANT,
    World,
    _add_all,
    _queries,
    _search_all,
    _shrunk,
    local_lake,
    s3_lake,
    server,
)

EPISODES = 3 * TAIL + 4  # three sealed shards and a tail


def _write(world: World) -> None:
    with server(world) as (url, services, _):

        async def write() -> None:
            async with connect(url, TOKENS[TENANT]) as client:
                await _add_all(client, world, EPISODES)

        run(write())
        state = SearchState.from_extra(services.lake.snapshot(TENANT).extra)
        assert state is not None
        sealed = [s for s in state.shards if not s.tail]
        assert len(sealed) >= 2 and all(s.chunks >= ivf.IVF_MIN_ROWS for s in sealed)


@pytest.fixture(scope="module", params=[local_lake, s3_lake], ids=["local", "s3"])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with pytest.MonkeyPatch.context() as mp:
        _shrunk(mp)
        mp.setattr(ivf_codes, "PQ_MIN_ROWS", 32)  # PQ codes, as real tenants have, not SQ8
        with request.param(tmp_path_factory.mktemp("int8plan")) as w:
            _write(w)
            yield w


def test_the_int8_plan_answers_through_mcp_as_the_float32_one(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a budget of 2 lists a shard-worth, so that the plan chooses among each shard's
    ~20, fresh servers answer the same ids, scores, breakdowns and passages either way, and
    the int8 plan was the one used when asked for."""
    monkeypatch.setattr(ivf, "PLAN_PER_SHARD", 2)
    monkeypatch.setattr(ivf, "PLAN_SHARE", 0.0)  # that budget, not the share floor (2514)
    planned: list[int] = []
    real = ivf_coarse.scores
    monkeypatch.setattr(ivf_coarse, "scores", lambda *a: planned.append(1) or real(*a))
    got = {}
    for name, start in (("float32", 1 << 62), ("int8", 0)):
        monkeypatch.setattr(ivf, "PLAN_INT8_FROM", start)
        with server(world) as (url, _, _):
            got[name] = run(_search_all(url, _queries(world.ids)))
        assert bool(planned) == (name == "int8")
    assert got["int8"] == got["float32"]
    assert got["int8"]["needle"]["episodes"][0]["id"] == world.ids[NEEDLE]
    assert got["int8"]["meaning"]["episodes"][0]["id"] == world.ids[NEEDLE]


def test_row_gains_reach_the_search_through_mcp(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shards written through /mcp carry each row's gain (decision 2508), a fresh server's
    searches (ranged shards first) apply them to the code candidates, and find what they found
    by code scores alone."""
    used: list[int] = []
    real_times = ivf_codes.Gains.times

    def spied(self: ivf_codes.Gains, rows: Any, scores: Any) -> Any:
        if self.gain is not None:
            used.append(len(rows))
        return real_times(self, rows, scores)

    monkeypatch.setattr(ivf_codes.Gains, "times", spied)
    with server(world) as (url, _, _):
        gained = run(_search_all(url, _queries(world.ids)))
    assert used and sum(used) > 0
    monkeypatch.setattr(ivf_codes.Gains, "times", lambda self, rows, scores: scores)
    with server(world) as (url, _, _):
        plain = run(_search_all(url, _queries(world.ids)))
    for name in ("needle", "meaning"):
        assert gained[name]["episodes"][0]["id"] == world.ids[NEEDLE]
        assert plain[name]["episodes"][0]["id"] == world.ids[NEEDLE]
    assert gained == plain  # a world this small re-scores every candidate: the same answers


def test_the_bm25_floor_answers_through_mcp_as_without_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fresh servers' searches (ranged shards first, then whole ones) give each shard's BM25
    kernel the floor of the shards done before it, and answer the same ids, scores, breakdowns
    and passages as searches without a floor. Shards this small always take the kernel's dense
    path (pruning's lookups would cost more), which gives its k best whatever the floor: that
    the pruned path cuts lists short below the floor, and only there, is held on shards of 512
    docs by tests/unit/test_bm25_floor.py."""
    floors: list[float] = []
    real = sides.bm25_shard

    def spied(*args: Any) -> Any:
        floors.append(args[-1])
        return real(*args)

    monkeypatch.setattr(sides, "bm25_shard", spied)
    with server(world) as (url, _, _):
        floored = run(_search_all(url, _queries(world.ids)))
    assert any(floor > 0 for floor in floors)
    monkeypatch.setattr(sides.Sides, "_raise_floor", lambda self, scores: None)
    floors.clear()
    with server(world) as (url, _, _):
        plain = run(_search_all(url, _queries(world.ids)))
    assert floors and not any(floors)
    assert floored == plain
    assert floored["needle"]["episodes"][0]["id"] == world.ids[NEEDLE]


def test_the_cutoff_over_few_shards_keeps_its_share_through_mcp(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh server's searches over the few shards written through /mcp re-score only the
    candidates at or above a cutoff of `rescore_across` depths (decision 2510): fewer rows
    than the 8 depths before it, which kept every candidate of a world this small, and the
    needle first either way. KEEP_SHARE is lowered so that the cutoff bites on shards this
    small (their depths are a few rows)."""
    kept: list[tuple[int, int]] = []  # (rows at or above the cutoff, all code candidates)
    real = Shard.vector_finish

    def spied(self: Shard, c: Any, k: int, cutoff: float) -> Any:
        if c.kind == "codes":
            kept.append((int((c.scores >= cutoff).sum()), len(c.scores)))
        return real(self, c, k, cutoff)

    monkeypatch.setattr(Shard, "vector_finish", spied)
    monkeypatch.setattr(sides, "RESCORE_LEAST", 0.5)
    monkeypatch.setattr(sides, "KEEP_SHARE", 0.2)
    with server(world) as (url, _, _):
        shared = run(_search_all(url, _queries(world.ids)))
    assert kept and sum(a for a, _ in kept) < sum(n for _, n in kept)
    kept.clear()
    monkeypatch.setattr(sides, "KEEP_SHARE", 1e9)  # 8 depths: every candidate here
    with server(world) as (url, _, _):
        whole = run(_search_all(url, _queries(world.ids)))
    assert kept and all(a == n for a, n in kept)
    for name in ("needle", "meaning"):
        assert shared[name]["episodes"][0]["id"] == world.ids[NEEDLE]
        assert whole[name]["episodes"][0]["id"] == world.ids[NEEDLE]


def test_the_early_re_score_answers_through_mcp_as_without_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh server's searches re-score a shard held whole on its vector task's thread when
    it alone gives as many code candidates as the cutoff keeps (decision 2511), and a client
    gets the same search results, scores and passages included, as with every candidate
    re-scored after the cutoff. The cutoff keeps half a shard's depth here, so that shards
    this small qualify."""
    early: list[int] = []
    real = Shard.rescore_early

    def spied(self: Shard, c: Any, bound: float) -> None:
        real(self, c, bound)
        early.append(int(c.early.sum()))

    monkeypatch.setattr(Shard, "rescore_early", spied)
    monkeypatch.setattr(sides, "RESCORE_LEAST", 0.5)
    monkeypatch.setattr(sides, "KEEP_SHARE", 0.0)
    queries = _queries(world.ids)
    with server(world) as (url, services, _):
        run(_search_all(url, queries))  # the shards are read by ranges first, then held whole
        services.search.shards.wait_promotions()
        before = len(early)
        at_once = run(_search_all(url, queries))
    assert len(early) > before  # whole shards re-scored early
    monkeypatch.setattr(sides, "RESCORE_EARLY", False)
    with server(world) as (url, services, _):
        run(_search_all(url, queries))
        services.search.shards.wait_promotions()
        after = run(_search_all(url, queries))
    assert at_once == after
    assert at_once["needle"]["episodes"][0]["id"] == world.ids[NEEDLE]


def test_the_hits_rows_are_the_same_without_the_row_shortcuts(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search results a client receives through /mcp (their times, text and every other
    field of the hits' rows) are the same whether a row's null cells and UTC timestamps are
    read from the chunks' validity and int64 values or by pyarrow's scalars."""
    read: list[int] = []
    real = rows._micros

    def counted(chunk: Any) -> Any:
        got = real(chunk)
        read.append(got is not None)
        return got

    monkeypatch.setattr(rows, "_micros", counted)
    with server(world) as (url, _, _):
        fast = run(_search_all(url, _queries(world.ids)))
    assert any(read)  # the episodes' UTC timestamp columns took the shortcut
    monkeypatch.setattr(rows, "_micros", lambda chunk: None)
    monkeypatch.setattr(rows, "_validity", lambda chunk: None)
    with server(world) as (url, _, _):
        scalars = run(_search_all(url, _queries(world.ids)))
    assert fast == scalars
    assert all(hit["created_at"] for got in fast.values() for hit in got["episodes"])
