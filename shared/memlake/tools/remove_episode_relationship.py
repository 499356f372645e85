"""remove_episode_relationship: delete one relationship by id."""

from __future__ import annotations

from memlake import relationships
from memlake.lake import Transaction
from memlake.models import Input, Output
from memlake.relationships.models import RelationshipId
from memlake.tools.base import Annotations, ToolContext, ToolSpec


class RemoveEpisodeRelationshipInput(Input):
    relationship_id: RelationshipId


class RemoveEpisodeRelationshipOutput(Output):
    success: bool
    relationship_id: str
    from_episode_id: str
    to_episode_id: str
    relationship_type: str
    message: str


def run(ctx: ToolContext, args: RemoveEpisodeRelationshipInput) -> RemoveEpisodeRelationshipOutput:
    def change(txn: Transaction) -> relationships.Rel:
        return relationships.remove(txn, args.relationship_id, ctx.principal.token_id)

    rel = ctx.lake.commit(ctx.tenant, change)
    return RemoveEpisodeRelationshipOutput(
        success=True,
        relationship_id=rel.id,
        from_episode_id=rel.from_id,
        to_episode_id=rel.to_id,
        relationship_type=rel.type,
        message="Relationship removed successfully",
    )


SPEC = ToolSpec(
    name="remove_episode_relationship",
    title="Remove episode relationship",
    description=("Remove a relationship by id."),
    input_model=RemoveEpisodeRelationshipInput,
    output_model=RemoveEpisodeRelationshipOutput,
    annotations=Annotations(read_only=False, destructive=True, idempotent=True),
    run=run,
)
