"""A search's BM25 floor (decision 2509): each shard's BM25 kernel is given the cand-th best
score of the shards done before it, and may leave out docs below it. The searches' hits,
scores, breakdowns and passages are those of searching without a floor, and the floor did cut
some shards' lists short; equal scores at the cut rank by id, whatever else was returned."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest

from memlake.config import Settings
from memlake.context import Principal
from memlake.search.hybrid import search
from memlake.search.index import kernels
from memlake.search.query import sides
from memlake.search.query.params import SearchParams
from memlake.search.query.retrieve import Found
from memlake.store.local import LocalStore
from tests.bench import scale_tenant, search_bench
from tests.integration.test_search_index import HashEmbedder
from tests.wiring import bare_lake, indexed_context

T = scale_tenant.TENANT
PER = 3
BM25_ONLY = SearchParams(weights={"bm25": 1.0, "vector": 0.0}, candidates=5)
HYBRID = SearchParams(candidates=5)


def _unit_rows(no: int, docs: int) -> np.ndarray:
    x = np.random.default_rng(no).normal(size=(docs * PER, 64))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """1,200 episodes of search_bench's Zipf words in shards of 512 and 64 docs (the write
    path's tiers), and 40 query texts."""
    root: Path = tmp_path_factory.mktemp("floor")
    embedder = HashEmbedder()
    words = search_bench.WORDS
    search_bench.WORDS = 120
    try:
        scale_tenant.build(
            bare_lake(LocalStore(root), dim=embedder.dim), root, 1200, embedder.name,
            _unit_rows, _unit_rows(99, 1), per=PER, tier=2,
        )  # fmt: skip
    finally:
        search_bench.WORDS = words
    ctx = indexed_context(Principal(T), bare_lake(LocalStore(root), dim=64), Settings(), embedder)
    return ctx, search_bench.query_texts(40)  # its rng moves on: drawn once


def _searches(world: Any) -> list[Any]:
    ctx, texts = world
    out = []
    for i, text in enumerate(texts):
        for params in (BM25_ONLY, HYBRID):
            hits = search(
                ctx.lake, ctx.services.search, T, query=text, limit=5, recency=False,
                query_vector=_unit_rows(i, 1)[0], params=params,
            )  # fmt: skip
            out.append([(h.id, h.score, h.breakdown, h.passage) for h in hits])
    return out


def test_searches_with_the_floor_are_the_ones_without(
    compiled: ModuleType, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[float, int, int]] = []
    bm25_shard = sides.bm25_shard

    def spy(*args: Any) -> Any:
        got = bm25_shard(*args)
        calls.append((args[-1], len(got[0]), args[6]))  # floor, docs given, k
        return got

    def kernels_of(mode: str) -> None:
        monkeypatch.setenv("MEMLAKE_KERNELS", mode)
        kernels.reset()
        assert kernels.which() == mode

    monkeypatch.setattr(sides, "bm25_shard", spy)
    kernels_of("numba")
    with_floor = _searches(world)
    floored = list(calls)
    kernels_of("numpy")  # its twin takes the floor but gives its k best anyway
    numpys = _searches(world)
    kernels_of("numba")
    monkeypatch.setattr(sides.Sides, "_raise_floor", lambda self, scores: None)
    calls.clear()
    without = _searches(world)
    kernels.reset()
    assert with_floor == without == numpys  # ids, scores, breakdowns and passages
    assert sum(len(hits) for hits in without) > 300
    assert all(floor == 0 for floor, _, _ in calls)
    assert sum(floor > 0 for floor, _, _ in floored) > 100
    assert sum(floor > 0 and given < k for floor, given, k in floored) > 20  # docs left out


def test_sides_raise_the_floor_to_the_cand_th_best_score() -> None:
    got = sides.Sides([], [], SearchParams(), cand=3)
    got._raise_floor(np.array([0.9, 0.2], np.float32))
    assert got._bm25_floor == 0.0  # fewer than cand scores: no floor yet
    got._raise_floor(np.array([0.5], np.float32))
    assert got._bm25_floor == pytest.approx(0.2)
    got._raise_floor(np.array([0.8, 0.1, 0.6], np.float32))
    assert got._bm25_floor == pytest.approx(0.6) and sorted(got._bm25_best) == pytest.approx(
        [0.6, 0.8, 0.9]
    )


def test_equal_scores_at_the_cut_rank_by_id_whatever_else_was_returned() -> None:
    """Entries left out below the floor must not change which equal ones make the cut."""

    def shard(ids: list[str]) -> Any:
        return SimpleNamespace(
            id_list=ids, t_end=np.zeros(len(ids), np.int64), passage_span=lambda p: None
        )

    shards = [shard(["e9", "e3", "e7"]), shard(["e5", "e1", "e8"])]
    picks = []
    for low in (True, False):
        found = Found()
        scores_a = np.array([0.9, 0.5, 0.5], np.float32)
        found.add(0, np.arange(3), scores_a, scores_a, np.zeros(3, np.int64), scores_a)
        docs_b = np.array([0, 1] + ([2] if low else []))
        scores_b = np.array([0.5, 0.5, 0.1][: len(docs_b)], np.float32)
        found.add(1, docs_b, scores_b, scores_b, np.zeros(len(docs_b), np.int64), scores_b)
        picks.append(found.ranked(shards, 3).ids)  # type: ignore[arg-type]
    assert picks[0] == picks[1] == ["e9", "e1", "e3"]
