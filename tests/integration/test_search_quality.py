"""A floor under retrieval quality: fused search must beat BM25 alone and vectors alone.

A smaller run of tests/bench/quality_bench.py (2 conversations x 20 long sessions, real MiniLM
embeddings through the lake's commit hooks); the full benchmark and the tuning behind the
defaults are in docs/decisions/0301-hybrid-search-tuning.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.quality_bench import MODES, build, evaluate
from tests.bench.sessions import corpus

pytestmark = pytest.mark.slow
# measured 0.740 and 0.788 (BM25 0.559 / 0.576, vectors 0.692 / 0.712): a little slack only
FLOOR_NDCG = 0.70
FLOOR_RECALL5 = 0.72


def test_fused_ranking_beats_both_retrievers(tmp_path: Path) -> None:
    convs = corpus(2, 20, 14, seed=5)
    ctx, ids = build(convs, tmp_path)
    scores = {mode: evaluate(ctx, convs, ids, params) for mode, params in MODES.items()}
    fused, bm25, vector = scores["fused"], scores["bm25"], scores["vector"]
    assert fused["ndcg@10"] > max(bm25["ndcg@10"], vector["ndcg@10"]), scores
    assert fused["recall@5"] > max(bm25["recall@5"], vector["recall@5"]), scores
    # floors: a regression in chunking, BM25 terms or fusion shows up here first
    assert fused["ndcg@10"] >= FLOOR_NDCG, scores
    assert fused["recall@5"] >= FLOOR_RECALL5, scores
