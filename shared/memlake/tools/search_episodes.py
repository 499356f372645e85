"""search_episodes: hybrid (BM25 + vector) search over episodes, with time and context filters."""

from __future__ import annotations

from functools import partial
from typing import Any

from pydantic import Field

from memlake.episodes import EpisodeFields, public_view, view_or_skip
from memlake.models import Context, Output, TimeRange
from memlake.search.query import MAX_LIMIT, MAX_QUERY_CHARS, SearchHit, hybrid_search
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class SearchEpisodesInput(TimeRange):
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="A question, a description or exact terms",
    )
    context: Context | None = Field(None, description="Only this project")
    limit: int = Field(10, ge=1, le=MAX_LIMIT)
    recency: bool = Field(True, description="Rank recent episodes slightly higher")


class ScoreBreakdown(Output):
    bm25_rank: int | None = Field(description="Rank by keywords (BM25), null if not matched")
    bm25_score: float | None
    vector_rank: int | None = Field(description="Rank by meaning (embeddings), null if not found")
    vector_score: float | None = Field(description="Cosine similarity of the best-matching chunk")
    rrf_score: float = Field(description="Fused rank score, 0..1, before the recency boost")
    recency: float | None = Field(description="Recency factor applied (0.9..1), null if off")
    score: float = Field(description="Final score, 0..1")


class EpisodeHit(EpisodeFields):
    score: float = Field(description="Relevance, 0..1 (1: ranked first by both retrievers)")
    breakdown: ScoreBreakdown


class SearchEpisodesOutput(Output):
    episodes: list[EpisodeHit]
    count: int


def _hit(hit: SearchHit, row: dict[str, Any]) -> EpisodeHit:
    return EpisodeHit(
        **public_view(row), score=hit.score, breakdown=ScoreBreakdown(**hit.breakdown)
    )


def run(ctx: ToolContext, args: SearchEpisodesInput) -> SearchEpisodesOutput:
    start, end = args.bounds()
    hits = hybrid_search(
        ctx,
        query=args.query,
        limit=args.limit,
        context=args.context,
        start=start,
        end=end,
        recency=args.recency,
    )
    episodes = [e for h in hits if (e := view_or_skip(h.row, partial(_hit, h))) is not None]
    return SearchEpisodesOutput(episodes=episodes, count=len(episodes))


SPEC = ToolSpec(
    name="search_episodes",
    title="Search episodes",
    description=(
        "Recall memories: episodes matching a question by meaning or exact words, best"
        " first, with full content and a 0-1 score. To browse by time use"
        " list_episodes; for tags, platform, thread or concept use find_episodes."
    ),
    input_model=SearchEpisodesInput,
    output_model=SearchEpisodesOutput,
    annotations=READ_ONLY,
    run=run,
)
