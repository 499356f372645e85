"""find_episodes: list episodes with ADR-007 filters, or search them when a query is given."""

from __future__ import annotations

from functools import partial
from typing import Any

from pydantic import Field

from memlake.cursors import ID, INT64, Cursor, pager
from memlake.episodes import TABLE as EPISODES
from memlake.episodes import public_view, view_or_skip
from memlake.errors import InvalidArgument
from memlake.lake.partial import unreadable_note
from memlake.layers import find, links
from memlake.layers.fields import (
    MAX_TAGS,
    ConceptId,
    Platform,
    SearchQuery,
    Tag,
    ThreadId,
    unique,
)
from memlake.layers.models import LayerEpisode
from memlake.models import Context, Output, TimeRange, Unreadable
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec
from memlake.tools.search_episodes import ScoreBreakdown

MAX_SEARCH_RESULTS = 50


class FindEpisodesInput(TimeRange):
    query: SearchQuery | None = Field(None, description="Omit to list newest first")
    context: Context | None = None
    platform: Platform | None = None
    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS)
    thread_id: ThreadId | None = None
    concept_id: ConceptId | None = None
    limit: int = Field(20, ge=1, le=100, description="At most 50 with a query")
    cursor: Cursor = Field(None, description="next_cursor (without query)")
    recency: bool = Field(True, description="Favour recent episodes")


class FoundEpisode(LayerEpisode):
    score: float | None = Field(None, description="Search relevance 0..1 (query only)")
    breakdown: ScoreBreakdown | None = Field(None, description="Why it ranked (query only)")


class FindEpisodesOutput(Output):
    mode: str = Field(description="list (filters, newest first) or search (by relevance)")
    episodes: list[FoundEpisode]
    count: int
    next_cursor: str | None = Field(
        None, description="Pass as cursor for the next page; absent at the end"
    )
    unreadable: Unreadable = None


def run(ctx: ToolContext, args: FindEpisodesInput) -> FindEpisodesOutput:
    start, end = args.bounds()
    tags = unique(args.tags)
    snap = ctx.lake.snapshot(ctx.tenant)
    table = find.filter_episodes(
        snap,
        context=args.context,
        start=start,
        end=end,
        platform=args.platform,
        tags=tags,
        thread_id=args.thread_id,
        concept_id=args.concept_id,
    )
    if args.query is None:
        cursors = pager(
            ctx.lake.store,
            ctx.tenant,
            "find_episodes",
            (INT64, ID),
            args.context,
            *args.cursor_bounds(),
            args.platform,
            tags,
            args.thread_id,
            args.concept_id,
            configured_key=ctx.settings.cursor_key,
        )
        page, next_cursor = find.newest_first(
            table, limit=args.limit, cursor=args.cursor, pager=cursors
        )
        scored: list[tuple[dict[str, Any], float | None, ScoreBreakdown | None]] = [
            (row, None, None) for row in page
        ]
        mode = "list"
    else:
        scored, next_cursor, mode = _search(ctx, args, table, start, end), None, "search"
    concept_ids = links.concept_ids_by_episode(snap, [row["id"] for row, _, _ in scored])

    def found_view(
        score: float | None, breakdown: ScoreBreakdown | None, row: dict[str, Any]
    ) -> FoundEpisode:
        return FoundEpisode(
            **public_view(row, full_content=False),
            concept_ids=concept_ids.get(row["id"], []),
            score=score,
            breakdown=breakdown,
        )

    found = [
        e
        for row, score, breakdown in scored
        if (e := view_or_skip(row, partial(found_view, score, breakdown))) is not None
    ]
    return FindEpisodesOutput(
        mode=mode,
        episodes=found,
        count=len(found),
        next_cursor=next_cursor,
        unreadable=unreadable_note(snap.table(EPISODES)),
    )


def _search(
    ctx: ToolContext, args: FindEpisodesInput, table: Any, start: Any, end: Any
) -> list[tuple[dict[str, Any], float | None, ScoreBreakdown | None]]:
    if args.cursor is not None:
        raise InvalidArgument(
            "cursor pages listings only", hint="Drop cursor, or raise limit (up to 50)."
        )
    if args.limit > MAX_SEARCH_RESULTS:
        raise InvalidArgument(
            f"limit is {args.limit}; with a query it is at most {MAX_SEARCH_RESULTS}",
            hint="Lower limit, or narrow the search with filters.",
        )
    from memlake.search.hybrid import search  # faiss, bm25s: loaded on first search

    narrowed = any(
        v is not None for v in (args.platform, args.tags or None, args.thread_id, args.concept_id)
    )
    allowed = set(table.column("id").to_pylist()) if narrowed else None
    if allowed is not None and not allowed:
        return []
    hits = search(
        ctx.lake,
        ctx.services.search,
        ctx.tenant,
        query=args.query or "",
        limit=args.limit,
        context=args.context,
        start=start,
        end=end,
        recency=args.recency,
        allowed_ids=allowed,
    )
    return [(h.row, float(h.score), ScoreBreakdown(**h.breakdown)) for h in hits]


SPEC = ToolSpec(
    name="find_episodes",
    title="Find episodes",
    description=(
        "Filter episodes by project, time, platform, tags (all), thread or concept,"
        " newest first; a query ranks them by its words. To recall by meaning, use"
        " search_episodes."
    ),
    input_model=FindEpisodesInput,
    output_model=FindEpisodesOutput,
    annotations=READ_ONLY,
    run=run,
)
