"""A vector task re-scores a shard's best candidates early, on its own thread, when the shard
alone gives as many code candidates as the cutoff across shards keeps (decision 2511): the
re-score after the cutoff then takes their exact scores, and the search finds what it found
re-scoring them all after the cutoff."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from memlake.search.index import ivf, shard_vectors, vector_scan
from memlake.search.index.shard import Shard
from memlake.search.query import sides
from memlake.search.query.fusion import cosine_score
from memlake.search.query.params import SearchParams
from tests.unit.test_partial_candidates import _vector_side
from tests.unit.test_probe_plan import _queries, shards  # noqa: F401  (a fixture)


@pytest.fixture
def half_a_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cutoff keeps half a shard's depth over all shards: each shard of the test world
    (80 code candidates a search of 10) alone gives twice that, so it re-scores early its
    best 40, and the cutoff keeps 40 of all of them."""
    monkeypatch.setattr(ivf, "PLAN_PER_SHARD", 12)
    monkeypatch.setattr(ivf, "PLAN_SHARE", 0.0)  # that budget, not the share floor (2514)
    monkeypatch.setattr(sides, "KEEP_SHARE", 0.0)
    monkeypatch.setattr(sides, "RESCORE_LEAST", 0.5)


def test_early_re_scores_give_the_same_hits(
    shards: list[Shard],  # noqa: F811
    half_a_depth: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    early: list[tuple[int, int]] = []  # (rows re-scored early, candidates)
    gathered_in_finish: list[int] = []
    real_early, real_finish = Shard.rescore_early, Shard.vector_finish
    real_scores = vector_scan.exact_scores
    finishing = [False]

    def spy_early(self: Shard, c: Any, bound: float) -> None:
        real_early(self, c, bound)
        early.append((int(c.early.sum()), len(c.rows)))

    def spy_finish(self: Shard, c: Any, k: int, cutoff: float) -> Any:
        finishing[0] = True
        try:
            return real_finish(self, c, k, cutoff)
        finally:
            finishing[0] = False

    def spy_scores(rows: Any, vectors: Any, q: Any) -> Any:
        if finishing[0]:
            gathered_in_finish.append(len(rows))
        return real_scores(rows, vectors, q)

    monkeypatch.setattr(Shard, "rescore_early", spy_early)
    monkeypatch.setattr(Shard, "vector_finish", spy_finish)
    monkeypatch.setattr(shard_vectors.vector_scan, "exact_scores", spy_scores)
    for q in _queries(shards, 12):
        monkeypatch.setattr(sides, "RESCORE_EARLY", False)
        early.clear()
        gathered_in_finish.clear()
        want = _vector_side(shards, q)
        assert not early and gathered_in_finish  # all re-scored after the cutoff
        monkeypatch.setattr(sides, "RESCORE_EARLY", True)
        early.clear()
        gathered_in_finish.clear()
        assert _vector_side(shards, q) == want
        assert early and all(rows == 40 < every for rows, every in early)
        assert not gathered_in_finish  # every row above the cutoff was re-scored early


def test_a_row_above_the_cutoff_not_re_scored_early_is_re_scored_then(
    shards: list[Shard],  # noqa: F811
) -> None:
    """Early rows that do not cover the cutoff's (a bound above it): the finish re-scores
    those rows itself, and finds what it finds without early rows."""
    shard, q = shards[0], _queries(shards, 3)[0].astype(np.float32)
    plain = shard.vector_candidates(q, None, 10)
    early = shard.vector_candidates(q, None, 10)
    assert plain is not None and early is not None and plain.kind == "codes"
    order = np.sort(early.scores)
    shard.rescore_early(early, float(order[-10]))  # the best 10 only
    cutoff = float(order[-30])  # the finish wants the best 30
    got, want = shard.vector_finish(early, 10, cutoff), shard.vector_finish(plain, 10, cutoff)
    assert got is not None and want is not None
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b)


def test_no_filter_or_shard_asks_deeper_than_depth_most(shards: list[Shard]) -> None:  # noqa: F811
    """`depth_most` bounds every Candidates.depth, so the early bound is at or below the
    cutoff (which keeps rescore_across x the deepest depth)."""
    q = _queries(shards, 3)[0].astype(np.float32)
    for shard in shards:
        for mask in (None, np.arange(shard.n) % 3 == 0, np.arange(shard.n) < 5):
            for k in (1, 10, 50):
                c = shard.vector_candidates(q, mask, k)
                assert c is not None and c.depth <= shard.depth_most(k)


@pytest.mark.parametrize("agg", ["max", "top2"])
def test_scores_of_every_shard_at_once_are_each_shards_own(agg: str) -> None:
    params = SearchParams(vec_agg=agg)
    rng = np.random.default_rng(3)
    tops = {}
    for no, n in enumerate((5, 0, 30)):
        best = rng.uniform(-0.2, 1.0, n).astype(np.float32)
        second = (best - rng.uniform(0, 0.3, n)).astype(np.float32)
        tops[no] = (np.arange(n), best, second, np.arange(n) * 2)
    got = sides._scored(tops, params)
    for no, (docs, best, second, passages) in tops.items():
        norm = cosine_score(best, params.cos_floor)
        if agg == "top2":
            norm = np.minimum(1.0, norm + params.agg_decay * cosine_score(second, params.cos_floor))
        g_docs, g_norm, g_raw, g_passages, g_best = got[no]
        assert g_docs is docs and g_raw is best and g_passages is passages
        assert g_norm.dtype == np.float32 and np.array_equal(g_norm, norm)
        assert np.array_equal(g_best, norm)
    assert sides._scored({}, params) == {}


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_a_rows_exact_score_does_not_depend_on_the_rows_beside_it(dtype: Any) -> None:
    """BLAS's product gave a block's last rows sums in another order (1 ulp apart from the same
    row in a bigger block): an early re-score and the finish would have disagreed."""
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((2000, 384)).astype(dtype)
    q = rng.standard_normal((1, 384)).astype(np.float32)
    rows = rng.permutation(2000)[:960]
    every = vector_scan.exact_scores(rows, vectors, q)
    for n in (1, 3, 7, 27, 333, 959):
        picked = rng.choice(960, n, replace=False)
        assert np.array_equal(vector_scan.exact_scores(rows[picked], vectors, q), every[picked])
