"""The reranking stage through memlake.search.hybrid.search on a small local lake: a fake
deterministic reranker, and Bedrock Rerank through a stubbed boto3 client."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from botocore.stub import Stubber

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.ids import new_id
from memlake.lake import Lake, Transaction
from memlake.search import indexing
from memlake.search.hybrid import search
from memlake.search.query.params import SearchHit
from memlake.search.query.rerank_bedrock import BedrockReranker
from memlake.search.query.reranker import Reranker
from memlake.search.searcher import Searcher
from memlake.store.local import LocalStore
from tests.support.stubbed import offline_client
from tests.unit.test_bedrock_rerank import answer, request
from tests.wiring import bare_lake, tool_context

T = "acme"
NOTES = [
    "Ravens nest on the quarry cliffs; the ravens were loud on Tuesday",
    "The quarry lake froze early this year",
    "A heron fishes in the quarry lake at dawn",
    "Invoices for the quarry survey are due on the fifth",
]


class HashEmbedder:
    """Unit vectors of hashed words (no model to load)."""

    name, dim, max_tokens = "test-hash", 64, 512

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.full((len(texts), self.dim), 1e-6, np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, zlib.crc32(w.encode()) % self.dim] += 1
        return out / np.linalg.norm(out, axis=1, keepdims=True)


class Herons:
    """Deterministic scorer: passages about herons are relevant, others barely."""

    name = "herons"

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def score(self, query: str, passages: list[str]) -> list[float]:
        self.seen.append(passages)
        return [0.9 if "heron" in p else 0.05 + i / 100 for i, p in enumerate(passages)]


def lake_with_notes(root: Path, reranker: Reranker | None) -> tuple[Lake, ToolContext, list[str]]:
    settings = Settings(data_dir=root, rerank_candidates=3)
    emb = HashEmbedder()
    lake = bare_lake(LocalStore(root), dim=emb.dim)
    cache = settings.shard_cache_bytes
    searcher = Searcher(settings, embedder=emb, cache_bytes=cache, reranker=reranker)
    indexing.install(lake, searcher)
    ctx = tool_context(Principal(T), lake, settings, searcher)
    ids = []
    for content in NOTES:
        row = {"id": new_id(), "content": content, "created_at": None}

        def change(txn: Transaction, row: dict[str, Any] = row) -> None:
            txn.put("episodes", row)

        lake.commit(T, change)
        ids.append(str(row["id"]))
    return lake, ctx, ids


def run(ctx: ToolContext, limit: int = 10) -> list[SearchHit]:
    return search(
        ctx.lake, ctx.services.search, T, query="quarry ravens", limit=limit, recency=False
    )


def fused_order(root: Path) -> list[SearchHit]:
    """The same search without a reranker (a second Searcher on the same lake)."""
    settings = Settings(data_dir=root)
    searcher = Searcher(settings, embedder=HashEmbedder(), reranker=None)
    lake = bare_lake(LocalStore(root), dim=64)
    return search(lake, searcher, T, query="quarry ravens", limit=10, recency=False)


def test_a_reranker_reorders_the_top_candidates_and_sets_score_and_breakdown(
    tmp_path: Path,
) -> None:
    reranker = Herons()
    _, ctx, ids = lake_with_notes(tmp_path, reranker)
    before = fused_order(tmp_path)
    assert before[0].id == ids[0]  # by keywords the raven note wins
    heron = ids[2]
    assert heron in [h.id for h in before[:3]] and before[0].id != heron
    after = run(ctx)
    assert after[0].id == heron  # the reranker moved it up
    assert after[0].score == 0.9 and after[0].breakdown["rerank"] == 0.9
    fused = {h.id: h.score for h in before}
    assert after[0].breakdown["fused"] == fused[heron]
    # one call, the first rerank_candidates (3) hits judged by their passages
    assert len(reranker.seen) == 1 and len(reranker.seen[0]) == 3
    assert [p for p in reranker.seen[0]] == [NOTES[ids.index(h.id)] for h in before[:3]]
    assert [h.breakdown["rerank"] for h in after[3:]] == [None] * len(after[3:])
    assert [h.score for h in after] == sorted((h.score for h in after), reverse=True)
    assert sorted(h.id for h in after) == sorted(h.id for h in before)
    # the limit is applied after reranking: a limit of 1 still gets the heron
    assert [h.id for h in run(ctx, limit=1)] == [heron]


def test_bedrock_rerank_end_to_end_through_the_search(tmp_path: Path) -> None:
    client = offline_client("bedrock-agent-runtime", "eu-central-1")
    arn = "arn:aws:bedrock:eu-central-1::foundation-model/amazon.rerank-v1:0"
    reranker = BedrockReranker("amazon.rerank-v1:0", client=client)
    _, ctx, ids = lake_with_notes(tmp_path, reranker)
    before = fused_order(tmp_path)
    texts = [NOTES[ids.index(h.id)] for h in before[:3]]
    scores = [0.2 if "Ravens" in t else 0.7 if "froze" in t else 0.4 for t in texts]
    with Stubber(client) as stub:
        stub.add_response("rerank", answer(scores), request("quarry ravens", texts, arn))
        after = run(ctx)
        stub.assert_no_pending_responses()
        expected = sorted(zip(scores, [h.id for h in before[:3]], strict=True), reverse=True)
        assert [(h.breakdown["rerank"], h.id) for h in after[:3]] == [
            (pytest.approx(s), i) for s, i in expected
        ]
        # access denied on the next search: the fused order, no rerank score, no failure
        stub.add_client_error("rerank", service_error_code="AccessDeniedException")
        again = run(ctx)
        stub.assert_no_pending_responses()
    assert [h.id for h in again] == [h.id for h in before]
    assert all(h.breakdown["rerank"] is None for h in again)
