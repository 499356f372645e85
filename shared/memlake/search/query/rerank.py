"""The reranking stage: a cross-encoder re-scores the fused top hits (docs/decisions/1210).

A `Reranker` reads the query and each hit's best passage together and returns a relevance in
0..1 per passage. `rerank_hits` reorders the first `top` hits by it: the reranker's relevance
becomes the hit's score (times the recency factor when recency ran, a factor <= 1, so scores
stay in 0..1 and `min_score` still means "this relevant"), `breakdown["rerank"]` holds it and
`breakdown["fused"]` keeps the fused score. Hits past `top` keep their order after the
reranked ones, their score capped at the lowest reranked score so the list stays sorted.

The reranker is optional and never fatal: when it fails (throttled, access denied, a bad
answer) the search logs a warning and returns the fused order with `breakdown["rerank"]` None.

Backends (`make_reranker`, from Settings): "none" (the default), "bedrock" (Amazon Bedrock's
Rerank API: memlake.search.query.rerank_bedrock) and "http" (a /rerank endpoint the user runs
or rents: Cohere, Jina, Voyage, Infinity, TEI; memlake.search.query.rerank_http). No local
cross-encoder ships with its weights in a package we can install (the search is in the
decision record), so there is no "local" backend; a local server behind "http" is one.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memlake.embed.base import Embedder
from memlake.search.query.best_passage import best_span, chunk_rows
from memlake.search.query.params import SearchHit
from memlake.search.query.reranker import Reranker, checked_scores

if TYPE_CHECKING:
    from memlake.config import Settings

log = logging.getLogger("memlake.search.query.rerank")

RERANKER_KINDS = ("none", "bedrock", "http")


def make_reranker(settings: Settings) -> Reranker | None:
    """The reranker Settings ask for (MEMLAKE_RERANKER), or None for "none"."""
    kind = settings.reranker
    if kind == "none":
        return None
    if kind == "bedrock":
        from memlake.search.query.rerank_bedrock import COHERE_RERANK, BedrockReranker

        return BedrockReranker(settings.rerank_model or COHERE_RERANK)
    if kind == "http":
        from memlake.search.query.rerank_http import HttpReranker

        return HttpReranker(settings.rerank_url, settings.rerank_api_key, settings.rerank_model)
    raise ValueError(f"unknown reranker {kind!r}; expected one of {RERANKER_KINDS}")


def rerank_hits(
    hits: list[SearchHit], query: str, reranker: Reranker, texts: list[str], top: int
) -> list[SearchHit]:
    """`hits` with the first `top` reordered by `reranker`'s relevance of `texts` (one per
    hit, the passage it is judged by; only the first `top` are read). See the module doc for
    the scores; on any failure of the reranker, `hits` in fused order with breakdown["rerank"]
    None (and a warning logged)."""
    head, tail = hits[:top], hits[top:]
    if not head:
        return hits
    try:
        relevance = checked_scores(
            reranker.score(query, texts[: len(head)]), len(head), reranker.name
        )
    except Exception as e:  # noqa: BLE001 - a search never fails because its reranker did
        log.warning("reranker %s failed, keeping the fused order: %s", reranker.name, e)
        return [_marked(h, h.score, None) for h in hits]
    scored = []
    for hit, rel in zip(head, relevance, strict=True):
        factor = hit.breakdown.get("recency")
        final = rel * float(factor) if isinstance(factor, int | float) else rel
        scored.append(_marked(hit, round(final, 6), round(rel, 6)))
    scored.sort(key=lambda h: (-h.score, h.id))
    floor = scored[-1].score
    return scored + [_marked(h, min(h.score, floor), None) for h in tail]


def _marked(hit: SearchHit, score: float, rerank: float | None) -> SearchHit:
    breakdown = dict(hit.breakdown)
    breakdown.setdefault("fused", breakdown.get("rrf_score", hit.score))
    breakdown["rerank"] = rerank
    breakdown["score"] = score
    return replace(hit, score=score, breakdown=breakdown)


def hit_texts(embedder: Embedder, hits: list[SearchHit], query: str) -> list[str]:
    """The text a reranker judges each hit by: its title and its best passage.

    The passage is `hit.passage` (character offsets into the content) where the search set
    one, else the passage search_episodes would show (memlake.search.query.best_passage)."""
    chunks: dict[str, Any] = {}
    missing = [h for h in hits if getattr(h, "passage", None) is None and h.snapshot is not None]
    if missing:
        chunks = chunk_rows(missing[0].snapshot, [h.id for h in missing])
    texts = []
    for hit in hits:
        content = hit.row.get("content") or ""
        span = getattr(hit, "passage", None)
        if span is None:
            best = best_span(embedder, hit.row, chunks.get(hit.id), query, hit.query_vector)
            span = (best.start, best.end)
        passage = content[span[0] : span[1]]
        title = hit.row.get("title")
        texts.append(f"{title}\n{passage}" if title else passage)
    return texts


def rerank_search(
    hits: list[SearchHit], query: str, embedder: Embedder, reranker: Reranker, top: int
) -> list[SearchHit]:
    """What memlake.search.hybrid.search calls last: `hits` reranked over the first `top`
    (Settings.rerank_candidates), judged by their best passages."""
    return rerank_hits(hits, query, reranker, hit_texts(embedder, hits[:top], query), top)
