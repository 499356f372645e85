"""The reranking stage's interface: rerank_hits' order, scores and fallback; its settings."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from memlake.config import Settings
from memlake.errors import ConfigurationError
from memlake.search.query.params import SearchHit
from memlake.search.query.rerank import make_reranker, rerank_hits
from memlake.search.query.reranker import Reranker, RerankError, checked_scores


class ByLength:
    """Deterministic scorer: longer passage, higher relevance (len / 100, capped by 0..1)."""

    name = "by-length"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, passages: list[str]) -> list[float]:
        self.calls.append((query, passages))
        return [len(p) / 100 for p in passages]


class Broken:
    name = "broken"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def score(self, query: str, passages: list[str]) -> list[float]:
        raise self.error


def hit(eid: str, score: float, recency: float | None = None) -> SearchHit:
    breakdown: dict[str, Any] = {"rrf_score": score, "recency": recency, "score": score}
    return SearchHit(id=eid, score=score, breakdown=breakdown, row={"id": eid})


def test_the_first_top_hits_are_reordered_by_relevance_and_scored_by_it() -> None:
    hits = [hit("a", 0.9), hit("b", 0.8), hit("c", 0.7), hit("d", 0.6)]
    texts = ["x" * 10, "x" * 50, "x" * 30, "x" * 99]
    reranker = ByLength()
    out = rerank_hits(hits, "q", reranker, texts, top=3)
    assert [h.id for h in out] == ["b", "c", "a", "d"]
    assert reranker.calls == [("q", texts[:3])]  # only the first `top` are read
    assert [h.score for h in out[:3]] == [0.5, 0.3, 0.1]
    assert [h.breakdown["rerank"] for h in out] == [0.5, 0.3, 0.1, None]
    assert [h.breakdown["fused"] for h in out] == [0.8, 0.7, 0.9, 0.6]
    assert all(h.breakdown["score"] == h.score for h in out)
    # the hit past `top` keeps its place after the reranked ones, its score capped so the
    # list stays sorted by score
    assert out[3].score == 0.1
    assert hits[0].score == 0.9 and "rerank" not in hits[0].breakdown  # inputs untouched


def test_the_recency_factor_still_applies_to_the_reranked_score() -> None:
    hits = [hit("old", 0.9, recency=0.5), hit("new", 0.8, recency=1.0)]
    out = rerank_hits(hits, "q", ByLength(), ["x" * 60, "x" * 40], top=2)
    assert [(h.id, h.score, h.breakdown["rerank"]) for h in out] == [
        ("new", 0.4, 0.4),
        ("old", 0.3, 0.6),
    ]


@pytest.mark.parametrize(
    "error",
    [RerankError("throttled", retryable=True), RuntimeError("bug"), ValueError("bad")],
)
def test_a_failing_reranker_leaves_the_fused_order_and_logs_a_warning(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    hits = [hit("a", 0.9), hit("b", 0.8)]
    with caplog.at_level(logging.WARNING, "memlake.search.query.rerank"):
        out = rerank_hits(hits, "q", Broken(error), ["t1", "t2"], top=2)
    assert [(h.id, h.score, h.breakdown["rerank"]) for h in out] == [
        ("a", 0.9, None),
        ("b", 0.8, None),
    ]
    assert "reranker broken failed" in caplog.text


def test_scores_of_the_wrong_count_or_not_numbers_fall_back_too() -> None:
    class Short:
        name = "short"

        def score(self, query: str, passages: list[str]) -> list[float]:
            return [0.5]

    out = rerank_hits([hit("a", 0.9), hit("b", 0.8)], "q", Short(), ["t1", "t2"], top=5)
    assert [h.breakdown["rerank"] for h in out] == [None, None]
    with pytest.raises(RerankError, match="returned 1 scores for 2"):
        checked_scores([0.5], 2, "x")
    with pytest.raises(RerankError, match="not a number"):
        checked_scores([float("nan")], 1, "x")
    assert checked_scores([-0.2, 0.4, 1.7], 3, "x") == [0.0, 0.4, 1.0]


def test_no_hits_need_no_reranker_call() -> None:
    reranker = ByLength()
    assert rerank_hits([], "q", reranker, [], top=20) == []
    assert reranker.calls == []


def test_the_protocol_is_what_a_reranker_implements() -> None:
    assert isinstance(ByLength(), Reranker)


def test_settings_choose_the_reranker(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMLAKE_RERANKER", "MEMLAKE_RERANK_MODEL", "MEMLAKE_RERANK_CANDIDATES"):
        monkeypatch.delenv(name, raising=False)
    cfg = Settings.from_env()
    assert (cfg.reranker, cfg.rerank_model, cfg.rerank_candidates) == (
        "none",
        "cohere.rerank-v3-5:0",
        20,
    )
    assert make_reranker(cfg) is None
    monkeypatch.setenv("MEMLAKE_RERANKER", "Bedrock")
    monkeypatch.setenv("MEMLAKE_RERANK_MODEL", "amazon.rerank-v1:0")
    monkeypatch.setenv("MEMLAKE_RERANK_CANDIDATES", "30")
    cfg = Settings.from_env()
    assert (cfg.reranker, cfg.rerank_model, cfg.rerank_candidates) == (
        "bedrock",
        "amazon.rerank-v1:0",
        30,
    )
    reranker = make_reranker(cfg)
    assert reranker is not None and reranker.name == "bedrock:amazon.rerank-v1:0"
    arn = "arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0"
    monkeypatch.setenv("MEMLAKE_RERANK_MODEL", arn)
    assert Settings.from_env().rerank_model == arn


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("MEMLAKE_RERANKER", "local", "MEMLAKE_RERANKER must be one of .none., .bedrock., .http."),
        ("MEMLAKE_RERANK_CANDIDATES", "0", "MEMLAKE_RERANK_CANDIDATES must be at least 1"),
        ("MEMLAKE_RERANK_CANDIDATES", "101", "MEMLAKE_RERANK_CANDIDATES must be at most 100"),
        ("MEMLAKE_RERANK_CANDIDATES", "many", "MEMLAKE_RERANK_CANDIDATES must be an integer"),
        ("MEMLAKE_RERANK_MODEL", "rerank please", "MEMLAKE_RERANK_MODEL must be a Bedrock"),
    ],
)
def test_bad_reranker_settings_are_clear_configuration_errors(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    if name == "MEMLAKE_RERANK_MODEL":  # a Bedrock model id is asked of the Bedrock reranker
        monkeypatch.setenv("MEMLAKE_RERANKER", "bedrock")
    with pytest.raises(ConfigurationError, match=message):
        Settings.from_env()


def test_settings_built_in_code_are_checked_too() -> None:
    with pytest.raises(ConfigurationError, match="reranker must be"):
        Settings(reranker="cohere")
    with pytest.raises(ConfigurationError, match="rerank_candidates must be in 1..100"):
        Settings(rerank_candidates=0)
