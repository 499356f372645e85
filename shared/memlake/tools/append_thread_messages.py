"""append_thread_messages: add messages to the end of a thread."""

from __future__ import annotations

from pydantic import Field

from memlake.lake import Transaction
from memlake.layers import threads
from memlake.layers.fields import MAX_MESSAGES_PER_CALL, MessageIn, ThreadId
from memlake.layers.models import ThreadView
from memlake.models import Input, Output
from memlake.tools.base import Annotations, ToolContext, ToolSpec


class AppendThreadMessagesInput(Input):
    thread_id: ThreadId
    messages: list[MessageIn] = Field(min_length=1, max_length=MAX_MESSAGES_PER_CALL)


class AppendThreadMessagesOutput(Output):
    thread: ThreadView
    appended: int
    first_seq: int = Field(description="seq of the first appended message")
    reopened: bool = Field(description="True when a completed thread went back to pending")


def run(ctx: ToolContext, args: AppendThreadMessagesInput) -> AppendThreadMessagesOutput:
    def change(txn: Transaction) -> AppendThreadMessagesOutput:
        row, first, reopened = threads.append(txn, args.thread_id, args.messages)
        return AppendThreadMessagesOutput(
            thread=ThreadView(**threads.view(row)),
            appended=len(args.messages),
            first_seq=first,
            reopened=reopened,
        )

    return ctx.lake.commit(ctx.tenant, change)


SPEC = ToolSpec(
    name="append_thread_messages",
    title="Append thread messages",
    description=(
        "Add messages to a thread; a completed one goes back to pending so they get processed."
    ),
    input_model=AppendThreadMessagesInput,
    output_model=AppendThreadMessagesOutput,
    annotations=Annotations(read_only=False, destructive=False, idempotent=False),
    run=run,
)
