"""get_pending_threads: threads awaiting processing, oldest first."""

from __future__ import annotations

from pydantic import Field

from memlake.cursors import ID, INT64, Cursor, pager
from memlake.lake.partial import unreadable_note
from memlake.layers import threads
from memlake.layers.models import ThreadView
from memlake.layers.tables import THREADS
from memlake.models import Context, Input, Output, Unreadable
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class GetPendingThreadsInput(Input):
    context: Context | None = Field(None, description="Only this project")
    limit: int = Field(10, ge=1, le=100)
    cursor: Cursor = None


class GetPendingThreadsOutput(Output):
    threads: list[ThreadView]
    count: int
    next_cursor: str | None = Field(
        None, description="Pass as cursor for the next page; absent at the end"
    )
    unreadable: Unreadable = None


def run(ctx: ToolContext, args: GetPendingThreadsInput) -> GetPendingThreadsOutput:
    snap = ctx.lake.snapshot(ctx.tenant)
    cursors = pager(
        ctx.lake.store,
        ctx.tenant,
        "pending_threads",
        (INT64, ID),
        args.context,
        configured_key=ctx.settings.cursor_key,
    )
    page, next_cursor = threads.pending_page(
        snap, context=args.context, limit=args.limit, cursor=args.cursor, pager=cursors
    )
    out = [ThreadView(**threads.view(r)) for r in page]
    return GetPendingThreadsOutput(
        threads=out,
        count=len(out),
        next_cursor=next_cursor,
        unreadable=unreadable_note(snap.table(THREADS)),
    )


SPEC = ToolSpec(
    name="get_pending_threads",
    title="Get pending threads",
    description=(
        "Threads waiting to become episodes, oldest first. Claim one with"
        " mark_thread_status; on a conflict, take the next."
    ),
    input_model=GetPendingThreadsInput,
    output_model=GetPendingThreadsOutput,
    annotations=READ_ONLY,
    run=run,
)
