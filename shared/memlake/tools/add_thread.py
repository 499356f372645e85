"""add_thread: store a raw conversation (ADR-007 Thread), pending processing."""

from __future__ import annotations

from pydantic import Field

from memlake import idempotency
from memlake.lake import Transaction
from memlake.layers import threads
from memlake.layers.fields import MAX_MESSAGES_PER_CALL, MessageIn, Title
from memlake.layers.models import ThreadView
from memlake.models import Context, Input
from memlake.timeutil import now
from memlake.tools.base import Annotations, ToolContext, ToolSpec


class AddThreadInput(Input):
    title: Title | None = None
    context: Context | None = Field(None, description="Project; default: the server's")
    messages: list[MessageIn] = Field(
        default_factory=list,
        max_length=MAX_MESSAGES_PER_CALL,
        description="First messages; append_thread_messages adds more",
    )
    idempotency_key: idempotency.IdempotencyKey | None = idempotency.key_field()


def run(ctx: ToolContext, args: AddThreadInput) -> ThreadView:
    row = threads.new_thread_row(args.title, args.context or ctx.settings.default_context, now())

    def change(txn: Transaction) -> ThreadView:
        return ThreadView(**threads.view(threads.create(txn, row, args.messages)))

    scope = idempotency.Scope.of(SPEC.name, args, ctx.settings.idempotency_ttl_seconds)
    return idempotency.commit_once(ctx.lake, ctx.tenant, scope, ThreadView, change)


SPEC = ToolSpec(
    name="add_thread",
    title="Add thread",
    description=(
        "Store a raw conversation for an agent to turn into an episode later"
        " (get_pending_threads). To save a memory at once, use add_episode."
        " idempotency_key makes retries safe."
    ),
    input_model=AddThreadInput,
    output_model=ThreadView,
    annotations=Annotations(read_only=False, destructive=False, idempotent=False),
    run=run,
)
