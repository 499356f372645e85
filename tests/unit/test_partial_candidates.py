"""A search over many shards first asks each IVF shard for only a share of its code candidates
and asks again only the shards whose every candidate made the cutoff across shards
(memlake.search.query.sides.first_share): the rows re-scored, so the results, are those of
asking every shard whole."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from memlake.search.index import ivf
from memlake.search.index.shard import Shard
from memlake.search.query import sides
from memlake.search.query.params import SearchParams
from tests.unit.test_probe_plan import _plan, _queries, shards  # noqa: F401  (a fixture)

VECTOR_ONLY = SearchParams(weights={"bm25": 0.0, "vector": 1.0})


def test_a_shallow_ask_is_the_start_of_the_whole_one(shards: list[Shard]) -> None:  # noqa: F811
    """Same planned lists, no filter: the `first` best code scores are the first of the
    `depth` best, and the rows above the last of them are the same rows."""
    checked = 0
    for q in _queries(shards, 12):
        plans = _plan(shards, q, 40)
        for shard, probes in zip(shards, plans, strict=True):
            index = shard.ivf_index()
            assert index is not None
            depth, first = 120, 30
            if not index.shallow(depth, first, None, probes):
                continue
            q1 = q.reshape(1, -1).astype(np.float32)
            rows, scores, how = index.candidates(q1, depth, 10**6, None, None, probes, first)
            all_rows, all_scores, _ = index.candidates(q1, depth, 10**6, None, None, probes)
            assert how == "first" and len(rows) == first and len(all_rows) == depth
            np.testing.assert_array_equal(scores, all_scores[:first])
            above = scores > scores[-1]  # (ties at the last score may be any of them)
            assert set(rows[above].tolist()) == set(all_rows[all_scores > scores[-1]].tolist())
            checked += 1
    assert checked > 10


def test_no_shallow_ask_with_a_filter_or_too_few_planned_rows(
    shards: list[Shard],  # noqa: F811
) -> None:
    """A filter, or planned lists holding fewer than `depth` rows, widen the search: a
    shallow ask would probe other lists than the whole one, so it is never made."""
    index = shards[0].ivf_index()
    assert index is not None
    probes = _plan(shards, _queries(shards, 3)[0], 40)[0]
    held = index._planned_entries(probes)
    assert index.shallow(held, 10, None, probes)
    assert not index.shallow(held + 1, 10, None, probes)  # the lists hold too few rows
    assert not index.shallow(held, 10, object(), probes)  # a filter's selector
    assert not index.shallow(held, 10, None, None)  # the shard's own probes
    assert not index.shallow(10, 10, None, probes)  # nothing less to ask
    q1 = _queries(shards, 3)[:1].astype(np.float32)
    rows, _, how = index.candidates(q1, held + 1, 10**6, None, None, probes, 10)
    assert how == "codes" and len(rows) == held + 1  # the whole ask, widened: not `first`


def _vector_side(parts: list[Shard], q: np.ndarray) -> list[Any]:
    s = sides.Sides(parts, [None] * len(parts), VECTOR_ONLY, 10)
    _, vector = s.run([[] for _ in parts], [], 0.0, q.astype(np.float32))
    return [(no, d.tolist(), n.tolist(), r.tolist(), b.tolist()) for no, d, n, r, b in vector.parts]


def test_the_rows_re_scored_are_those_of_whole_asks(
    shards: list[Shard],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a cutoff that keeps one shard's depth (RESCORE_ACROSS 1) and first asks of half:
    the same docs and scores as asking every shard whole, with some shards asked again (their
    every candidate made the cutoff) and some not."""
    monkeypatch.setattr(sides, "RESCORE_ACROSS", 1)
    monkeypatch.setattr(ivf, "PLAN_PER_SHARD", 12)
    monkeypatch.setattr(ivf, "PLAN_SHARE", 0.0)  # that budget, not the share floor (2514)
    asked: list[tuple[int, float]] = []
    real = Shard.vector_candidates

    def spy(self: Shard, *args: Any) -> Any:
        got = real(self, *args)
        asked.append((shards.index(self), args[4] if len(args) > 4 else 1.0))
        return got

    monkeypatch.setattr(Shard, "vector_candidates", spy)
    again = once = 0
    for q in _queries(shards, 24):
        monkeypatch.setattr(sides, "FIRST_MARGIN", 10**9)
        whole = _vector_side(shards, q)
        asked.clear()
        monkeypatch.setattr(sides, "FIRST_MARGIN", 2)
        assert sides.first_share([s.n for s in shards]) == 0.5
        assert _vector_side(shards, q) == whole
        shallow = [no for no, share in asked if share < 1]
        whole_asks = [no for no, share in asked if share == 1]
        assert sorted(shallow) == [0, 1, 2, 3]
        again += len(whole_asks)
        once += 4 - len(whole_asks)
    assert again > 0 and once > 0


def test_first_share_by_tenant_size() -> None:
    assert sides.first_share([]) == 1.0
    assert sides.first_share([512] * 7 + [16384, 64]) == 1.0  # 20k: 12 shard-worths
    assert sides.first_share([32768] * 9 + [4096]) == pytest.approx(16 / 73)
