"""The two retrievers' per-shard tasks on two threads (memlake.search.query.sides, decision 1315):
the same results as one thread, every task run once, errors raised to the caller."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlake.pools import Helpers, Job
from memlake.search.hybrid import search
from memlake.search.index.shard import Shard
from memlake.search.query import sides
from tests.integration.test_search_index import HashEmbedder, T, make, put, state
from tests.support.tiny_layout import tiny_ivf_layout


class NeverStarted:
    """Search helpers whose calls never start: the caller runs every task."""

    @staticmethod
    def start(fn: Any) -> Job:
        return Job(fn)


@pytest.fixture
def lake_ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Three shards or more, one with an IVF index at least (tiny layout and IVF sizes)."""
    tiny_ivf_layout(monkeypatch)
    lake, ctx = make(tmp_path, HashEmbedder())
    ids = [put(lake, f"note number{i} about topic{i % 3} and colour{i % 5}") for i in range(23)]
    assert len(state(lake).shards) >= 3
    return ids, ctx


def _results(ctx: Any, query: str, **kw: Any) -> list[tuple[str, float, Any]]:
    hits = search(ctx.lake, ctx.services.search, T, query=query, limit=20, recency=False, **kw)
    return [(h.id, h.score, h.breakdown) for h in hits]


QUERIES = ["topic1 colour2", "note number7", "colour4", "about topic0 number12"]


def test_two_threads_find_what_one_thread_finds(
    lake_ctx: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids, ctx = lake_ctx
    some = set(ids[::2])
    shared = {q: _results(ctx, q) for q in QUERIES}
    shared["filtered"] = _results(ctx, "topic2 colour1", allowed_ids=some)
    helped: list[str] = []
    real = Shard.vector_candidates

    def spy(self: Shard, *args: Any, **kwargs: Any) -> Any:
        helped.append(threading.current_thread().name)
        return real(self, *args, **kwargs)

    real_bm25 = sides.bm25_shard

    def slow_bm25(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.02)  # the caller is busy long enough for the pool thread to start
        return real_bm25(*args, **kwargs)

    monkeypatch.setattr(Shard, "vector_candidates", spy)
    monkeypatch.setattr(sides, "bm25_shard", slow_bm25)
    assert _results(ctx, QUERIES[0]) == shared[QUERIES[0]]
    assert any(name.startswith("memlake-search") for name in helped)  # the pool helped
    monkeypatch.setattr(sides, "bm25_shard", real_bm25)
    monkeypatch.setattr(sides, "_HELPERS", NeverStarted)
    helped.clear()
    alone = {q: _results(ctx, q) for q in QUERIES}
    alone["filtered"] = _results(ctx, "topic2 colour1", allowed_ids=some)
    assert alone == shared  # identical ids, scores and breakdowns
    assert helped and all(name == threading.current_thread().name for name in helped)


def test_every_shard_task_runs_once(lake_ctx: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _, ctx = lake_ctx
    ran: list[tuple[str, int]] = []
    real = sides.Sides._work

    def counting(self: sides.Sides, take: Any, done: dict[Any, Any]) -> None:
        def recording() -> Any:
            task = take()
            if task is not None:
                ran.append(task)
            return task

        real(self, recording, done)

    monkeypatch.setattr(sides.Sides, "_work", counting)
    _results(ctx, "topic1 colour2")
    assert len(ran) == len(set(ran))
    shards = len(state(ctx.lake).shards)
    assert {no for side, no in ran if side == "vector"} == set(range(shards))
    assert {side for side, _ in ran} == {"bm25", "vector"}


def test_an_error_in_the_helper_thread_reaches_the_caller(
    lake_ctx: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, ctx = lake_ctx

    real = Shard.vector_candidates

    def broken(self: Shard, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name.startswith("memlake-search"):
            raise RuntimeError("damaged vectors")  # in the helper only
        # the caller's vector tasks wait, so the helper takes one even on a busy machine
        # (it once took none: the caller's thread had done every task before it started)
        time.sleep(0.05)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Shard, "vector_candidates", broken)
    with pytest.raises(RuntimeError, match="damaged vectors"):
        _results(ctx, "topic1 colour2")


def test_a_vector_task_waits_for_the_probe_plan(
    lake_ctx: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper may take a vector task before the caller has planned the probes: it must
    search with the plan, never without it."""
    _, ctx = lake_ctx
    planned = threading.Event()
    real_plans = sides.probe_plans
    seen: list[bool] = []

    def slow_plans(*args: Any) -> Any:
        got = real_plans(*args)
        planned.wait(0.05)  # give the helper time to take a vector task first
        planned.set()
        return got

    real = Shard.vector_candidates

    def spy(self: Shard, *args: Any) -> Any:
        seen.append(planned.is_set())
        return real(self, *args)

    monkeypatch.setattr(sides, "probe_plans", slow_plans)
    monkeypatch.setattr(Shard, "vector_candidates", spy)
    _results(ctx, "topic1 colour2")
    assert seen and all(seen)


def test_a_failed_plan_frees_the_pool_thread(
    lake_ctx: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool thread waits for the caller's probe plan: when planning fails it must not wait
    forever (each such search would take a pool thread for good)."""
    _, ctx = lake_ctx

    def broken_plan(*args: Any) -> Any:
        time.sleep(0.05)  # the pool thread is waiting for the plan by now
        raise RuntimeError("centroids unreadable")

    monkeypatch.setattr(sides, "probe_plans", broken_plan)
    _fails_and_frees_the_pool(ctx, monkeypatch, "centroids unreadable")


def _fails_and_frees_the_pool(ctx: Any, monkeypatch: pytest.MonkeyPatch, error: str) -> None:
    """A search raises `error` and its pool thread (one in the pool) is free again."""
    helpers = Helpers(1, "test-one-helper")
    monkeypatch.setattr(sides, "_HELPERS", helpers)
    with pytest.raises(RuntimeError, match=error):
        _results(ctx, "topic1 colour2")
    free = threading.Event()
    helpers.start(free.set)
    assert free.wait(timeout=5)  # its one thread took the next call


def test_the_query_is_embedded_while_bm25_runs(
    lake_ctx: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a query vector, the query is embedded on its own thread while the caller runs
    the BM25 tasks; the results are those of a search given the vector, and a failed embedding
    is the search's error and frees the pool thread that waits for the plan."""
    _, ctx = lake_ctx
    searcher = ctx.services.search
    given = {q: _results(ctx, q, query_vector=searcher.embed_query(q)) for q in QUERIES}
    embedded_on: list[str] = []
    bm25_while: list[bool] = []
    embed, bm25_task = searcher.embed_query, sides.Sides._bm25
    began, bm25_done, returned = threading.Event(), threading.Event(), threading.Event()

    def slow_embed(text: str) -> np.ndarray:
        embedded_on.append(threading.current_thread().name)
        began.set()
        assert bm25_done.wait(5)  # the BM25 tasks do not wait for the embedding
        got = embed(text)
        returned.set()
        return got

    def spy(self: sides.Sides, no: int) -> Any:
        assert began.wait(5)
        if not bm25_done.is_set():  # a search's first BM25 task: while the query is embedded
            # (the later ones may run after it: the pool thread plans the probes meanwhile)
            bm25_while.append(not returned.is_set())
        bm25_done.set()
        return bm25_task(self, no)

    monkeypatch.setattr(searcher, "embed_query", slow_embed)
    monkeypatch.setattr(sides.Sides, "_bm25", spy)
    for q in QUERIES:
        began.clear()
        bm25_done.clear()
        returned.clear()
        assert _results(ctx, q) == given[q]
    assert all(t.startswith("memlake-embed") for t in embedded_on) and len(embedded_on) == 4
    assert len(bm25_while) == 4 and all(bm25_while)

    monkeypatch.setattr(sides.Sides, "_bm25", bm25_task)

    def broken(text: str) -> np.ndarray:
        raise RuntimeError("model unavailable")

    monkeypatch.setattr(searcher, "embed_query", broken)
    _fails_and_frees_the_pool(ctx, monkeypatch, "model unavailable")
