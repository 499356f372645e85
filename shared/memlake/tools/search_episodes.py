"""search_episodes: hybrid (BM25 + vector) search over episodes, with time and context filters."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from memlake.episodes import EpisodeFields, public_view, view_or_skip
from memlake.models import Context, Output, TimeRange
from memlake.search.answers import Ask, ContentMode, answer
from memlake.search.query.params import MAX_LIMIT, MAX_QUERY_CHARS, SearchHit
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec

if TYPE_CHECKING:
    from memlake.search.query.best_passage import Span

#: All hits of one response together carry at most this many characters of content and
#: passage text (docs/decisions/1113, 1215); a hit cut by it has truncated: true.
MAX_RESULT_CHARS = 65_536
#: content="full" repeats the passage text only for a content longer than this (decision 1215):
#: there finding the match costs reading, and the text adds at most ~30%
PASSAGE_TEXT_FROM = 2_000
#: content="evidence": characters of the answer's JSON as sent, unless the caller sets
#: `budget` (decisions 2401, 4501)
EVIDENCE_BUDGET = 8_000
MIN_BUDGET = 500


class SearchEpisodesInput(TimeRange):
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="A question, description or exact words",
    )
    context: Context | None = Field(None, description="Only this project")
    limit: int = Field(10, ge=1, le=MAX_LIMIT)
    recency: bool = Field(True, description="Favour recent episodes")
    content: ContentMode = Field(
        "full",
        description="Text: full, passage (~600 chars), none, or evidence (the best turns of 20+"
        " hits); 65,536 in all",
    )
    budget: int = Field(
        EVIDENCE_BUDGET, ge=MIN_BUDGET, le=MAX_RESULT_CHARS, description="evidence: answer chars"
    )
    min_score: float | None = Field(None, ge=0, le=1)  # self-explaining: no description

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query is empty; describe what you are looking for")
        return value


class ScoreBreakdown(Output):
    bm25_rank: int | None = Field(None, description="Rank by keywords (BM25); absent: not matched")
    bm25_score: float | None = Field(None, description="Share of the query's words matched, 0..1")
    vector_rank: int | None = Field(None, description="Rank by meaning; absent: not found")
    vector_score: float | None = Field(
        None, description="Cosine similarity of the best-matching passage"
    )
    fused: float = Field(description="Both retrievers combined, 0..1, before rerank and recency")
    rerank: float | None = Field(None, description="Reranker relevance, 0..1; absent: none ran")
    recency: float | None = Field(None, description="Recency factor applied (0.9..1); absent: off")
    score: float = Field(description="Final score, 0..1")


class Passage(Output):
    start: int = Field(description="Where the passage starts in content (characters)")
    end: int = Field(description="Where it ends: content[start:end]")
    text: str | None = Field(
        None, description="content[start:end]; with content='full' only for a long content"
    )


class EpisodeHit(EpisodeFields):
    content: str | None = Field(None, description="The content (content='full')")  # type: ignore[assignment]
    passage: Passage = Field(description="The best-matching passage: why it matched")
    content_chars: int | None = Field(
        None, description="Length of the whole content, when it is not all in this hit"
    )
    truncated: bool = Field(
        False, description="True when the response cap cut this hit's text (get_episode has it)"
    )
    score: float = Field(description="Relevance, 0..1, comparable across queries")
    breakdown: ScoreBreakdown


class EvidenceHit(Output):
    """content="evidence": an episode and its excerpts shown (get_episode has the rest)."""

    id: str
    at: str | None = Field(None, description="When it started, UTC, to the minute")
    context: str | None = None
    title: str | None = None
    score: float = Field(description="The episode's relevance, 0..1")
    excerpts: list[str] = Field(description="Its turns shown, in reading order")


class SearchEpisodesOutput(Output):
    episodes: list[EpisodeHit] = Field(description="Best first; empty when nothing matched")
    evidence: list[EvidenceHit] | None = Field(
        default=None, description="content='evidence': episodes by their best turn, best first"
    )
    count: int
    degraded: str | None = Field(
        default=None, description="What this answer left out, when a service failed"
    )


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


@dataclass(frozen=True)
class _Shown:
    """What one hit shows: its passage, and how many characters of content and of passage text
    it asks for before the cap."""

    span: Span
    content: int
    passage: int


def _wants(span: Span, content: str, mode: ContentMode) -> _Shown:
    full = len(content) if mode == "full" else 0
    text = mode == "passage" or (mode == "full" and len(content) > PASSAGE_TEXT_FROM)
    return _Shown(span, full, span.end - span.start if text else 0)


def _hit(
    hit: SearchHit, shown: _Shown, kept: int, mode: ContentMode, row: dict[str, Any]
) -> EpisodeHit:
    view = public_view(row)
    content = view.pop("content")
    span = shown.span
    passage = Passage(start=span.start, end=span.end, text=None)
    if shown.passage:  # the passage text is kept first: it is why the hit matched
        end = span.start + min(kept, shown.passage)
        passage = Passage(start=span.start, end=end, text=content[span.start : end])
    extra: dict[str, Any] = {"truncated": kept < shown.content + shown.passage}
    if mode == "full":
        extra["content"] = content[: max(0, kept - shown.passage)]
    if mode != "full" or extra["truncated"]:
        extra["content_chars"] = len(content)
    breakdown = ScoreBreakdown(**hit.breakdown)
    return EpisodeHit(**view, **extra, passage=passage, score=hit.score, breakdown=breakdown)


def _shape(hits: list[SearchHit], spans: list[Span], mode: ContentMode) -> list[EpisodeHit]:
    wants = [_wants(s, h.row.get("content") or "", mode) for h, s in zip(hits, spans, strict=True)]
    keep = fair_shares([w.content + w.passage for w in wants], MAX_RESULT_CHARS)
    shaped = (
        view_or_skip(hit.row, partial(_hit, hit, shown, kept, mode))
        for hit, shown, kept in zip(hits, wants, keep, strict=True)
    )
    return [e for e in shaped if e is not None]


def run(ctx: ToolContext, args: SearchEpisodesInput) -> SearchEpisodesOutput:
    start, end = args.bounds()
    ask = Ask(
        query=args.query, mode=args.content, limit=args.limit, budget=args.budget,
        context=args.context, start=start, end=end, recency=args.recency,
        min_score=args.min_score,
    )  # fmt: skip
    found = answer(ctx.lake, ctx.services.search, ctx.tenant, ask)
    if args.content == "evidence":
        shaped = [view_or_skip(e, lambda e: EvidenceHit(**e)) for e in found.evidence]
        evidence = [e for e in shaped if e is not None]
        return SearchEpisodesOutput(
            episodes=[], evidence=evidence, count=len(evidence), degraded=found.degraded
        )
    episodes = _shape(found.hits, found.spans, args.content)
    return SearchEpisodesOutput(episodes=episodes, count=len(episodes), degraded=found.degraded)


SPEC = ToolSpec(
    name="search_episodes",
    title="Search episodes",
    description=(
        "Recall memories by meaning or exact words, best first, with a 0-1 score and the"
        " passage that matched. Browse by time: list_episodes; by tags, platform, thread or"
        " concept: find_episodes."
    ),
    input_model=SearchEpisodesInput,
    output_model=SearchEpisodesOutput,
    annotations=READ_ONLY,
    run=run,
)
