"""search_episodes: hybrid (BM25 + vector) search over episodes, with time and context filters."""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from pydantic import Field, field_validator

from memlake.episodes import EpisodeFields, public_view, view_or_skip
from memlake.models import Context, Output, TimeRange
from memlake.search.query import MAX_LIMIT, MAX_QUERY_CHARS, SearchHit, search
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec

#: All hits of one response together carry at most this many characters of content or passage
#: text (docs/decisions/1113); a hit cut by it has truncated: true.
MAX_RESULT_CHARS = 65_536
ContentMode = Literal["full", "passage", "none"]


class SearchEpisodesInput(TimeRange):
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="A question, a description or exact terms",
    )
    context: Context | None = Field(None, description="Only this project")
    limit: int = Field(10, ge=1, le=MAX_LIMIT)
    recency: bool = Field(True, description="Rank recent episodes slightly higher")
    content: ContentMode = Field(
        "full",
        description="Text per hit: full, passage (best ~600 chars with offsets) or none."
        " Hits share at most 65,536 chars; a cut hit has truncated and get_episode has it all",
    )

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query is empty; describe what you are looking for")
        return value


class ScoreBreakdown(Output):
    bm25_rank: int | None = Field(None, description="Rank by keywords (BM25); absent: not matched")
    bm25_score: float | None = None
    vector_rank: int | None = Field(None, description="Rank by meaning; absent: not found")
    vector_score: float | None = Field(
        None, description="Cosine similarity of the best-matching chunk"
    )
    fused: float = Field(description="Fused score, 0..1, before rerank and recency")
    rerank: float | None = None
    recency: float | None = Field(None, description="Recency factor applied (0.9..1); absent: off")
    score: float = Field(description="Final score, 0..1")


class Passage(Output):
    text: str
    start: int = Field(description="Where text starts in content (characters)")
    end: int = Field(description="Where it ends: content[start:end] == text")


class EpisodeHit(EpisodeFields):
    content: str | None = Field(None, description="The content (content='full')")  # type: ignore[assignment]
    passage: Passage | None = Field(None, description="The best-matching passage")
    content_chars: int | None = Field(
        None, description="Length of the whole content, when it is not all in this hit"
    )
    truncated: bool = Field(
        False, description="True when the response cap cut this hit's text (get_episode has it)"
    )
    score: float = Field(description="Relevance, 0..1 (1: ranked first by both retrievers)")
    breakdown: ScoreBreakdown


class SearchEpisodesOutput(Output):
    episodes: list[EpisodeHit] = Field(description="Best first; empty when nothing matched")
    count: int


def fair_shares(lengths: list[int], cap: int) -> list[int]:
    """How many characters each text keeps so that together they keep at most `cap`: every
    text gets an equal share, and what a short text leaves of its share goes to the longer ones
    (max-min fair); all of them when they fit."""
    if sum(lengths) <= cap:
        return list(lengths)
    out = [0] * len(lengths)
    left, remaining = cap, len(lengths)
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        out[i] = min(lengths[i], left // remaining)
        left -= out[i]
        remaining -= 1
    return out


def _texts(ctx: ToolContext, hits: list[SearchHit], mode: ContentMode, query: str) -> list[Any]:
    """Per hit: its full content (full), its best passage's span (passage) or None."""
    if mode == "full":
        return [h.row.get("content") or "" for h in hits]
    if mode == "none" or not hits:
        return [None] * len(hits)
    from memlake.search.best_passage import best_span, chunk_rows

    chunks = chunk_rows(hits[0].snapshot, [h.id for h in hits])
    return [
        best_span(ctx.services.search, h.row, chunks[h.id], query, h.query_vector) for h in hits
    ]


def _hit(
    hit: SearchHit, text: Any, kept: int, mode: ContentMode, row: dict[str, Any]
) -> EpisodeHit:
    view = public_view(row)
    content = view.pop("content")
    length = len(text) if isinstance(text, str) else 0 if text is None else text.end - text.start
    extra: dict[str, Any] = {"truncated": kept < length}
    if mode == "full":
        extra["content"] = content[:kept]
    elif mode == "passage":
        end = text.start + kept
        extra["passage"] = Passage(text=content[text.start : end], start=text.start, end=end)
    if mode != "full" or kept < length:
        extra["content_chars"] = len(content)
    breakdown = ScoreBreakdown(**hit.breakdown)
    return EpisodeHit(**view, **extra, score=hit.score, breakdown=breakdown)


def _shape(hits: list[SearchHit], texts: list[Any], mode: ContentMode) -> list[EpisodeHit]:
    lengths = [0 if t is None else len(t) if isinstance(t, str) else t.end - t.start for t in texts]
    keep = fair_shares(lengths, MAX_RESULT_CHARS)
    shaped = (
        view_or_skip(hit.row, partial(_hit, hit, text, kept, mode))
        for hit, text, kept in zip(hits, texts, keep, strict=True)
    )
    return [e for e in shaped if e is not None]


def run(ctx: ToolContext, args: SearchEpisodesInput) -> SearchEpisodesOutput:
    start, end = args.bounds()
    hits = search(
        ctx.lake,
        ctx.services.search,
        ctx.tenant,
        query=args.query,
        limit=args.limit,
        context=args.context,
        start=start,
        end=end,
        recency=args.recency,
    )
    episodes = _shape(hits, _texts(ctx, hits, args.content, args.query), args.content)
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
