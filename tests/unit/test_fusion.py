"""Weighted RRF, score normalisation and recency, checked against hand-computed values."""

from __future__ import annotations

import math

import pytest

from memlake.search.query.fusion import (
    FusedHit,
    apply_recency,
    bm25_share,
    convex_fuse,
    cosine_score,
    max_rrf_score,
    minmax,
    normalise_scores,
    recency_boost,
    rrf_fuse,
)

DAY = 86_400.0


def test_rrf_hand_computed() -> None:
    hits = rrf_fuse({"bm25": ["a", "b", "c"], "vector": ["c", "a", "d"]}, k=60)
    by_id = {h.id: h for h in hits}
    assert by_id["a"].score == pytest.approx(1 / 61 + 1 / 62)  # 0.032522...
    assert by_id["c"].score == pytest.approx(1 / 63 + 1 / 61)  # 0.032266...
    assert by_id["b"].score == pytest.approx(1 / 62)
    assert by_id["d"].score == pytest.approx(1 / 63)
    assert [h.id for h in hits] == ["a", "c", "b", "d"]
    assert by_id["a"].ranks == {"bm25": 1, "vector": 2}
    assert by_id["d"].ranks == {"bm25": None, "vector": 3}


def test_weighted_rrf() -> None:
    hits = rrf_fuse(
        {"bm25": ["a", "b"], "vector": ["b", "a"]}, k=1.0, weights={"bm25": 2.0, "vector": 0.5}
    )
    # a: 2/(1+1) + 0.5/(1+2) = 1.1667; b: 2/(1+2) + 0.5/(1+1) = 0.9167
    assert [h.id for h in hits] == ["a", "b"]
    assert hits[0].score == pytest.approx(1.0 + 0.5 / 3)
    assert hits[1].score == pytest.approx(2 / 3 + 0.25)


def test_missing_weight_defaults_to_one_and_extra_weights_are_ignored() -> None:
    hits = rrf_fuse({"bm25": ["a"]}, k=10, weights={"vector": 3.0})
    assert hits == [FusedHit("a", pytest.approx(1 / 11), {"bm25": 1})]  # type: ignore[arg-type]


def test_zero_weight_keeps_ids_with_zero_contribution() -> None:
    hits = rrf_fuse({"bm25": ["a"], "vector": ["b"]}, k=60, weights={"vector": 0.0})
    assert [(h.id, h.score) for h in hits] == [("a", pytest.approx(1 / 61)), ("b", 0.0)]


def test_ties_are_broken_by_id() -> None:
    hits = rrf_fuse({"x": ["b", "a"], "y": ["a", "b"]})
    assert hits[0].score == hits[1].score  # exact tie: fsum of the same terms
    assert [h.id for h in hits] == ["a", "b"]
    three = rrf_fuse({"x": ["c", "b", "a"], "y": ["a", "c", "b"], "z": ["b", "a", "c"]})
    assert len({h.score for h in three}) == 1
    assert [h.id for h in three] == ["a", "b", "c"]


def test_duplicates_count_at_their_best_rank() -> None:
    hits = rrf_fuse({"x": ["a", "b", "a"]}, k=60)
    assert {h.id: h.ranks["x"] for h in hits} == {"a": 1, "b": 2}
    assert hits[0].score == pytest.approx(1 / 61)


def test_empty_inputs_and_limit() -> None:
    assert rrf_fuse({}) == []
    assert rrf_fuse({"bm25": [], "vector": []}) == []
    hits = rrf_fuse({"x": ["a", "b", "c"]}, limit=2)
    assert [h.id for h in hits] == ["a", "b"]
    assert rrf_fuse({"x": ["a"]}, limit=0) == []


@pytest.mark.parametrize("k", [0.0, -1.0, math.inf, math.nan])
def test_invalid_k(k: float) -> None:
    with pytest.raises(ValueError):
        rrf_fuse({"x": ["a"]}, k=k)
    with pytest.raises(ValueError):
        max_rrf_score(["x"], k=k)


@pytest.mark.parametrize("w", [-0.1, math.inf, math.nan, "heavy"])
def test_invalid_weights(w: object) -> None:
    with pytest.raises(ValueError):
        rrf_fuse({"x": ["a"]}, weights={"x": w})  # type: ignore[dict-item]


def test_invalid_limit() -> None:
    with pytest.raises(ValueError):
        rrf_fuse({"x": ["a"]}, limit=-1)


def test_max_score_and_normalisation() -> None:
    assert max_rrf_score(["bm25", "vector"], k=60) == pytest.approx(2 / 61)
    assert max_rrf_score(["bm25", "vector"], k=60, weights={"bm25": 3.0}) == pytest.approx(4 / 61)
    hits = rrf_fuse({"bm25": ["a", "b"], "vector": ["a", "c"]}, k=60)
    norm = normalise_scores(hits, k=60)
    assert [h.id for h in norm] == [h.id for h in hits]
    by_id = {h.id: h.score for h in norm}
    assert by_id["a"] == pytest.approx(1.0)  # first in both retrievers
    assert by_id["b"] == pytest.approx((1 / 62) / (2 / 61))  # 0.4919...
    assert by_id["c"] == pytest.approx(0.4919354838709677)


def test_normalisation_single_retriever_top_hit_gets_half() -> None:
    hits = rrf_fuse({"bm25": ["a"], "vector": []}, k=60)
    assert normalise_scores(hits, k=60)[0].score == pytest.approx(0.5)


def test_normalisation_with_weights_and_edge_cases() -> None:
    w = {"bm25": 1.0, "vector": 3.0}
    hits = rrf_fuse({"bm25": ["b"], "vector": ["a"]}, k=10, weights=w)
    norm = {h.id: h.score for h in normalise_scores(hits, k=10, weights=w)}
    assert norm == {"a": pytest.approx(0.75), "b": pytest.approx(0.25)}
    assert normalise_scores([]) == []
    zero = rrf_fuse({"x": ["a"]}, weights={"x": 0.0})
    assert normalise_scores(zero, weights={"x": 0.0})[0].score == 0.0


def test_recency_boost_values() -> None:
    assert recency_boost(0.8, 0.0) == pytest.approx(0.8)
    # one half-life: factor 0.9 + 0.1 * 0.5 = 0.95
    assert recency_boost(0.8, 30 * DAY) == pytest.approx(0.76)
    # two half-lives with weight 0.5: factor 0.5 + 0.5 * 0.25 = 0.625
    assert recency_boost(1.0, 14 * DAY, half_life_days=7, weight=0.5) == pytest.approx(0.625)
    assert recency_boost(1.0, 1e12) == pytest.approx(0.9)  # floor is 1 - weight
    assert recency_boost(0.5, -5 * DAY) == pytest.approx(0.5)  # future timestamps count as now
    assert recency_boost(0.0, 0.0) == 0.0
    assert recency_boost(0.7, 90 * DAY, weight=0.0) == pytest.approx(0.7)


def test_recency_boost_validation() -> None:
    with pytest.raises(ValueError):
        recency_boost(1.0, 0.0, half_life_days=0)
    with pytest.raises(ValueError):
        recency_boost(1.0, 0.0, weight=1.5)
    with pytest.raises(ValueError):
        recency_boost(1.0, 0.0, weight=-0.1)


def test_apply_recency_reorders() -> None:
    hits = [FusedHit("old", 1.0, {"x": 1}), FusedHit("new", 0.9, {"x": 2})]
    out = apply_recency(hits, {"old": 365 * DAY, "new": 0.0}, half_life_days=30, weight=0.5)
    assert [h.id for h in out] == ["new", "old"]
    assert out[0].score == pytest.approx(0.9)
    assert out[1].score == pytest.approx(0.5 + 0.5 * 0.5 ** (365 / 30))
    unknown = apply_recency(hits, {}, weight=1.0)
    assert [(h.id, h.score) for h in unknown] == [("old", 1.0), ("new", 0.9)]


def test_convex_fuse_is_a_weighted_sum_of_normalised_scores() -> None:
    scores = {"bm25": {"a": 0.8, "b": 0.2}, "vector": {"b": 1.0, "c": 0.5}}
    fused = {h.id: h for h in convex_fuse(scores, alpha=0.7)}
    assert fused["a"].score == pytest.approx(0.56)
    assert fused["b"].score == pytest.approx(0.7 * 0.2 + 0.3 * 1.0)
    assert fused["c"].score == pytest.approx(0.15)
    assert fused["a"].ranks == {"bm25": 1, "vector": None}
    assert fused["b"].ranks == {"bm25": 2, "vector": 1}
    # a zero weight turns a retriever off: the other's score is used alone
    off = {h.id: h.score for h in convex_fuse(scores, alpha=0.7, weights={"vector": 0.0})}
    assert off == {"a": pytest.approx(0.8), "b": pytest.approx(0.2), "c": 0.0}
    with pytest.raises(ValueError):
        convex_fuse(scores, alpha=1.5)


def test_theoretical_normalisations_are_absolute_and_minmax_is_not() -> None:
    assert bm25_share(3.0, 6.0) == 0.5 and bm25_share(9.0, 6.0) == 1.0 and bm25_share(1, 0) == 0
    assert cosine_score(0.2, 0.2) == 0.0 and cosine_score(0.6, 0.2) == pytest.approx(0.5)
    assert cosine_score(-0.3, 0.2) == 0.0
    # min-max gives the best candidate 1.0 however weak it is
    assert minmax({"x": 0.01, "y": 0.02}) == {"x": 0.0, "y": 1.0}
    assert minmax({"x": 0.3}) == {"x": 1.0} and minmax({}) == {}
