"""delete_episode: remove an episode (idempotent; reports how many were deleted)."""

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


def run(ctx: ToolContext, args: DeleteEpisodeInput) -> DeleteEpisodeOutput:
    def change(txn: Transaction) -> int:
        if not txn.exists(TABLE, args.id):
            return 0
        txn.delete(TABLE, args.id)
        with acting_as(ctx.principal.token_id):  # cleanups' audit records name the caller
            for cleanup in ctx.services.on_episode_delete:  # links, relationships, vectors
                cleanup(txn, args.id)
        return 1

    return DeleteEpisodeOutput(id=args.id, deleted=ctx.lake.commit(ctx.tenant, change))


SPEC = ToolSpec(
    name="delete_episode",
    title="Delete episode",
    description=("Delete an episode by id, with its relationships and concept links."),
    input_model=DeleteEpisodeInput,
    output_model=DeleteEpisodeOutput,
    annotations=Annotations(read_only=False, destructive=True, idempotent=True),
    run=run,
)
