"""delete_episode: remove an episode (idempotent; reports how many were deleted). The next
maintenance pass erases it from every stored object (memlake.erasure)."""

from __future__ import annotations

from pydantic import Field

from memlake.audit import acting_as
from memlake.episodes import TABLE
from memlake.lake import Transaction
from memlake.models import EpisodeId, Input, Output
from memlake.tools.base import Annotations, ToolContext, ToolSpec


class DeleteEpisodeInput(Input):
    id: EpisodeId


class DeleteEpisodeOutput(Output):
    id: str
    deleted: int = Field(description="1 if the episode existed and is now gone, else 0")
    thread_kept: str | None = Field(None, description="Its source thread, kept: delete_thread")


def run(ctx: ToolContext, args: DeleteEpisodeInput) -> DeleteEpisodeOutput:
    def change(txn: Transaction) -> DeleteEpisodeOutput:
        row = txn.get(TABLE, args.id)
        if row is None:
            return DeleteEpisodeOutput(id=args.id, deleted=0, thread_kept=None)
        txn.delete(TABLE, args.id)
        with acting_as(ctx.principal.token_id):  # cleanups' audit records name the caller
            for cleanup in ctx.services.on_episode_delete:  # links, relationships, vectors,
                cleanup(txn, args.id)  # the erasure request (memlake.erasure)
        thread = row.get("source_thread_id")
        return DeleteEpisodeOutput(id=args.id, deleted=1, thread_kept=thread)

    return ctx.lake.commit(ctx.tenant, change)


SPEC = ToolSpec(
    name="delete_episode",
    title="Delete episode",
    description="Delete an episode, its versions and links; erased from storage by the next"
    " maintenance pass.",
    input_model=DeleteEpisodeInput,
    output_model=DeleteEpisodeOutput,
    annotations=Annotations(read_only=False, destructive=True, idempotent=True),
    run=run,
)
