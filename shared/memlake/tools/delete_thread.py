"""delete_thread: remove a thread and its messages; the next maintenance pass erases them from
every stored object (memlake.erasure). Episodes made from it stay (they are records of their
own: delete_episode erases one)."""

from __future__ import annotations

from pydantic import Field

from memlake.erasure import requests as erasures
from memlake.lake import Transaction
from memlake.layers.fields import ThreadId
from memlake.layers.tables import MESSAGES, THREADS, message_id
from memlake.models import Input, Output
from memlake.tools.base import Annotations, ToolContext, ToolSpec


class DeleteThreadInput(Input):
    id: ThreadId


class DeleteThreadOutput(Output):
    id: str
    deleted: int = Field(description="1 if the thread existed and is now gone, else 0")
    messages: int = Field(0, description="Messages deleted with it")


def run(ctx: ToolContext, args: DeleteThreadInput) -> DeleteThreadOutput:
    def change(txn: Transaction) -> DeleteThreadOutput:
        thread = txn.get(THREADS, args.id)
        if thread is None:
            return DeleteThreadOutput(id=args.id, deleted=0, messages=0)
        count = int(thread.get("message_count") or 0)
        txn.delete(THREADS, args.id)
        for seq in range(count):
            txn.delete(MESSAGES, message_id(args.id, seq))
        erasures.request(txn, "thread", args.id, thread.get("created_at"))
        return DeleteThreadOutput(id=args.id, deleted=1, messages=count)

    return ctx.lake.commit(ctx.tenant, change)


SPEC = ToolSpec(
    name="delete_thread",
    title="Delete thread",
    description="Delete a thread and its messages; erased from storage as episodes are.",
    input_model=DeleteThreadInput,
    output_model=DeleteThreadOutput,
    annotations=Annotations(read_only=False, destructive=True, idempotent=True),
    run=run,
)
