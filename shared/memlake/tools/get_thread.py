"""get_thread: a thread with a page of its messages."""

from __future__ import annotations

from pydantic import Field

from memlake.layers import threads
from memlake.layers.fields import MAX_THREAD_MESSAGES, ThreadId
from memlake.layers.models import MessageOut, ThreadView
from memlake.layers.tables import THREADS
from memlake.models import Input, Output
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class GetThreadInput(Input):
    id: ThreadId
    offset: int = Field(0, ge=0, le=MAX_THREAD_MESSAGES, description="0-based")
    limit: int = Field(100, ge=0, le=500)


class GetThreadOutput(Output):
    thread: ThreadView
    messages: list[MessageOut]
    next_offset: int | None = Field(
        None, description="Pass as offset for more messages; absent at the end"
    )


def run(ctx: ToolContext, args: GetThreadInput) -> GetThreadOutput:
    snap = ctx.lake.snapshot(ctx.tenant)
    row = snap.table(THREADS).get(args.id)
    if row is None:
        raise threads.not_found(args.id)
    msgs = threads.read_messages(snap, row, args.offset, args.limit)
    end = args.offset + len(msgs)
    more = end < (row.get("message_count") or 0) and args.limit > 0
    return GetThreadOutput(
        thread=ThreadView(**threads.view(row)),
        messages=[MessageOut(**threads.message_view(m)) for m in msgs],
        next_offset=end if more else None,
    )


SPEC = ToolSpec(
    name="get_thread",
    title="Get thread",
    description=("Read a thread: status, claim, its episode and a page of messages."),
    input_model=GetThreadInput,
    output_model=GetThreadOutput,
    annotations=READ_ONLY,
    run=run,
)
