"""A floor under retrieval quality on both dev corpora: fused search must beat each retriever.

Smaller runs of tests/bench/quality_bench.py (real MiniLM embeddings through the lake's commit
hooks): 2 conversations x 20 long sessions of tests/bench/sessions.py (paraphrased questions,
vectors strong), and 2 two-friend chats of tests/bench/conversations.py (LoCoMo-style, names
and nouns make keywords strong). The full benchmark and the tuning behind the defaults are in
docs/decisions/0301-hybrid-search-tuning.md and docs/decisions/1220-conversation-dev-corpus.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.bench import conversations, real_chats, sessions
from tests.bench.quality_bench import MODES, build, evaluate, evidence_coverage

pytestmark = pytest.mark.slow
# measured 0.740 and 0.788 (BM25 0.559 / 0.576, vectors 0.692 / 0.712): a little slack only
# after turn-aware passages (i12-passages) and convex fusion (1201): fused NDCG@10 ~0.68 (RRF
# 0.666), recall@5 ~0.70
FLOOR_NDCG = 0.66
FLOOR_RECALL5 = 0.68
# conversations.corpus(2, seed=5), today's code: fused NDCG@10 0.690, recall_all@10 0.740
# (BM25 0.692 / 0.693, vectors 0.540 / 0.677)
CHAT_FLOOR_NDCG = 0.66
CHAT_FLOOR_RECALL_ALL = 0.70


def test_fused_ranking_beats_both_retrievers(tmp_path: Path) -> None:
    convs = sessions.corpus(2, 20, 14, seed=5)
    ctx, ids = build(convs, tmp_path)
    scores = {mode: evaluate(ctx, convs, ids, params) for mode, params in MODES.items()}
    fused, bm25, vector = scores["fused"], scores["bm25"], scores["vector"]
    assert fused["ndcg@10"] > max(bm25["ndcg@10"], vector["ndcg@10"]), scores
    assert fused["recall@5"] > max(bm25["recall@5"], vector["recall@5"]), scores
    # floors: a regression in chunking, BM25 terms or fusion shows up here first
    assert fused["ndcg@10"] >= FLOOR_NDCG, scores
    assert fused["recall@5"] >= FLOOR_RECALL5, scores


@pytest.fixture(scope="module")
def chat_lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, list[str]]:
    """2 generated chats (a seed the full bench does not use) in a lake."""
    convs = conversations.corpus(2, seed=5)
    ctx, ids = build(convs, Path(tmp_path_factory.mktemp("chats")))
    return convs, ctx, ids


@pytest.fixture(scope="module")
def chat_scores(chat_lake: tuple[Any, Any, list[str]]) -> dict[str, dict[str, Any]]:
    """BM25, vectors and fused on the 2 chats."""
    convs, ctx, ids = chat_lake
    return {mode: evaluate(ctx, convs, ids, params) for mode, params in MODES.items()}


def _brief(scores: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    return {m: {k: round(v, 3) for k, v in s.items() if k != "by_kind"} for m, s in scores.items()}


def test_fused_ranking_on_conversations_beats_vectors_and_keeps_a_floor(
    chat_scores: dict[str, dict[str, Any]],
) -> None:
    fused, vector = chat_scores["fused"], chat_scores["vector"]
    assert fused["ndcg@10"] > vector["ndcg@10"], _brief(chat_scores)
    assert fused["ndcg@10"] >= CHAT_FLOOR_NDCG, _brief(chat_scores)
    assert fused["recall_all@10"] >= CHAT_FLOOR_RECALL_ALL, _brief(chat_scores)
    assert set(fused["by_kind"]) == set(conversations.KINDS), _brief(chat_scores)


def test_fused_ranking_on_conversations_beats_bm25(chat_scores: dict[str, dict[str, Any]]) -> None:
    fused, bm25 = chat_scores["fused"], chat_scores["bm25"]
    assert fused["ndcg@10"] > bm25["ndcg@10"], _brief(chat_scores)


# conversations.corpus(2, seed=5): evidence within the answer size (as sent) of ten passages
# shows every evidence turn for EVIDENCE_MEASURED of the questions, the ten passages for
# PASSAGE_MEASURED (issue 45's code; decision 4501)
EVIDENCE_MEASURED = 0.803
PASSAGE_MEASURED = 0.654
EVIDENCE_FLOOR = 0.75
# real_chats.corpus(2, seed=5), chats shaped like real people's: 0.750 against 0.642
REAL_EVIDENCE_MEASURED = 0.750
REAL_FLOOR = 0.70


@pytest.fixture(scope="module")
def real_lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, list[str]]:
    convs = real_chats.corpus(2, seed=5)
    ctx, ids = build(convs, Path(tmp_path_factory.mktemp("real")))
    return convs, ctx, ids


@pytest.mark.parametrize("corpus", ["chats", "real chats"])
def test_evidence_shows_more_answering_turns_than_passages_of_its_size(
    corpus: str, request: pytest.FixtureRequest
) -> None:
    lake = "chat_lake" if corpus == "chats" else "real_lake"
    convs, ctx, ids = request.getfixturevalue(lake)
    floor = EVIDENCE_FLOOR if corpus == "chats" else REAL_FLOOR
    passage = evidence_coverage(ctx, convs, ids, content="passage", limit=10)
    size = int(passage["chars"])  # the mean answer as sent
    evidence = evidence_coverage(ctx, convs, ids, content="evidence", budget=size)
    brief = {"evidence": evidence, "passage": passage}
    assert evidence["chars"] <= size, brief
    assert evidence["all_shown"] > passage["all_shown"] + 0.05, brief
    assert evidence["all_shown"] >= floor, brief
    for kind in ("single-hop", "multi-hop"):
        assert evidence["by_kind"][kind]["share_shown"] >= passage["by_kind"][kind]["share_shown"]
