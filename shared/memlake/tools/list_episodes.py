"""list_episodes: newest first, with context and time filters and cursor pagination."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from memlake.cursors import ID, INT64, Cursor, pager
from memlake.episodes import TABLE as EPISODES
from memlake.episodes import EpisodeFields, filtered, occurred_bounds, public_view, view_or_skip
from memlake.lake.partial import unreadable_note
from memlake.models import Context, Output, TimeRange, Unreadable
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class ListEpisodesInput(TimeRange):
    context: Context | None = Field(None, description="Only this project")
    limit: int = Field(20, ge=1, le=100)
    cursor: Cursor = None


class EpisodeSummary(EpisodeFields):
    """An episode in a listing: content cut to 500 characters."""


class ListEpisodesOutput(Output):
    episodes: list[EpisodeSummary]
    count: int
    next_cursor: str | None = Field(
        None, description="Pass as cursor for the next page; absent at the end"
    )
    unreadable: Unreadable = None


def _summary(row: dict[str, Any]) -> EpisodeSummary:
    return EpisodeSummary(**public_view(row, full_content=False))


def run(ctx: ToolContext, args: ListEpisodesInput) -> ListEpisodesOutput:
    start, end = args.bounds()
    cursors = pager(
        ctx.lake.store,
        ctx.tenant,
        "list_episodes",
        (INT64, ID),
        args.context,
        *args.cursor_bounds(),
        configured_key=ctx.settings.cursor_key,
    )
    snap = ctx.lake.snapshot(ctx.tenant)
    table = filtered(snap, context=args.context, start=start, end=end)
    at, _ = occurred_bounds(table)
    at_us = pc.cast(at, pa.int64())
    table = table.append_column("__at", at_us)
    if args.cursor:
        cur_at, cur_id = cursors.decode(args.cursor)
        before = pc.or_(
            pc.less(table.column("__at"), cur_at),
            pc.and_(pc.equal(table.column("__at"), cur_at), pc.less(table.column("id"), cur_id)),
        )
        table = table.filter(before)
    table = table.sort_by([("__at", "descending"), ("id", "descending")])
    page = table.slice(0, args.limit + 1).to_pylist()
    more = len(page) > args.limit
    page = page[: args.limit]
    next_cursor = cursors.encode([page[-1]["__at"], page[-1]["id"]]) if more else None
    episodes = [e for r in page if (e := view_or_skip(r, _summary)) is not None]
    return ListEpisodesOutput(
        episodes=episodes,
        count=len(episodes),
        next_cursor=next_cursor,
        unreadable=unreadable_note(snap.table(EPISODES)),
    )


SPEC = ToolSpec(
    name="list_episodes",
    title="List episodes",
    description=(
        "Browse episodes newest first by when they happened; content cut to 500"
        " chars. To search, use search_episodes."
    ),
    input_model=ListEpisodesInput,
    output_model=ListEpisodesOutput,
    annotations=READ_ONLY,
    run=run,
)
