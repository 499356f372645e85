"""check_relationship_exists: is there a relationship from one episode to another?"""

from __future__ import annotations

from pydantic import Field

from memlake.models import EpisodeId, Input, Output
from memlake.relationships import EdgeView, public_view
from memlake.relationships.models import RelationshipType
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class CheckRelationshipExistsInput(Input):
    from_episode_id: EpisodeId
    to_episode_id: EpisodeId
    relationship_type: RelationshipType | None = None


class ExistingRelationship(Output):
    id: str
    relationship_type: str
    strength: float
    created_at: str


class CheckRelationshipExistsOutput(Output):
    exists: bool
    relationships: list[ExistingRelationship] = Field(
        description="Every matching relationship from -> to (one per type at most)"
    )


def run(ctx: ToolContext, args: CheckRelationshipExistsInput) -> CheckRelationshipExistsOutput:
    edges = EdgeView.of_snapshot(ctx.lake.snapshot(ctx.tenant))
    matching = sorted(
        (
            rel
            for rel in edges.outgoing(args.from_episode_id)
            if rel.to_id == args.to_episode_id
            and (args.relationship_type is None or rel.type == args.relationship_type)
        ),
        key=lambda rel: rel.id,
    )
    found = []
    for rel in matching:
        view = public_view(rel)
        found.append(
            ExistingRelationship(
                id=rel.id,
                relationship_type=rel.type,
                strength=rel.strength,
                created_at=view["created_at"],
            )
        )
    return CheckRelationshipExistsOutput(exists=bool(found), relationships=found)


SPEC = ToolSpec(
    name="check_relationship_exists",
    title="Check relationship exists",
    description=("Whether a relationship goes from one episode to another, with every match."),
    input_model=CheckRelationshipExistsInput,
    output_model=CheckRelationshipExistsOutput,
    annotations=READ_ONLY,
    run=run,
)
