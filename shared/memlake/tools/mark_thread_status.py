"""mark_thread_status: move a thread through pending -> processing -> completed."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memlake.lake import Transaction
from memlake.layers import threads
from memlake.layers.fields import ThreadId
from memlake.layers.models import ThreadView
from memlake.models import Input, Output
from memlake.tools.base import Annotations, ToolContext, ToolSpec


class MarkThreadStatusInput(Input):
    id: ThreadId
    status: Literal["pending", "processing", "completed"]


class MarkThreadStatusOutput(Output):
    thread: ThreadView
    previous_status: str
    move: str = Field(description="claim | complete | release | reprocess")


def run(ctx: ToolContext, args: MarkThreadStatusInput) -> MarkThreadStatusOutput:
    def change(txn: Transaction) -> MarkThreadStatusOutput:
        row, previous = threads.move(txn, args.id, args.status, ctx.principal.token_id)
        return MarkThreadStatusOutput(
            thread=ThreadView(**threads.view(row)),
            previous_status=previous,
            move=threads.MOVES[(previous, args.status)],
        )

    return ctx.lake.commit(ctx.tenant, change)


SPEC = ToolSpec(
    name="mark_thread_status",
    title="Mark thread status",
    description=(
        "Claim a thread (pending->processing; of racing agents one wins, the others get"
        " a conflict), complete, release or reprocess it."
    ),
    input_model=MarkThreadStatusInput,
    output_model=MarkThreadStatusOutput,
    annotations=Annotations(read_only=False, destructive=False, idempotent=False),
    run=run,
)
