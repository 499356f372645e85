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
    title: Title | None = Field(None, description="Human-readable title of the conversation")
    context: Context | None = Field(
        None, description="Project namespace; the server default is used when omitted"
    )
    messages: list[MessageIn] = Field(
        default_factory=list,
        max_length=MAX_MESSAGES_PER_CALL,
        description="First messages, in order (up to 100; append_thread_messages adds more)",
    )
    idempotency_key: idempotency.IdempotencyKey | None = idempotency.key_field()


def run(ctx: ToolContext, args: AddThreadInput) -> ThreadView:
    row = threads.new_thread_row(args.title, args.context or ctx.settings.default_context, now())

    def change(txn: Transaction) -> ThreadView:
        return ThreadView(**threads.view(threads.create(txn, row, args.messages)))

    scope = idempotency.Scope.of(ctx, SPEC.name, args)
    return idempotency.commit_once(ctx, scope, ThreadView, change)


SPEC = ToolSpec(
    name="add_thread",
    title="Add thread",
    description=(
        "Store a raw conversation (messages with role, content, time) as a thread. New threads"
        " are pending: an agent finds them with get_pending_threads, claims one with"
        " mark_thread_status(status='processing'), writes an episode with upsert_episode"
        " (source_thread_id) and marks it completed. Pass idempotency_key (a fresh UUID) to"
        " make retries safe: a repeat returns the first thread instead of a duplicate."
    ),
    input_model=AddThreadInput,
    output_model=ThreadView,
    annotations=Annotations(read_only=False, destructive=False, idempotent=False),
    run=run,
)
