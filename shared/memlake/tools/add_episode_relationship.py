"""add_episode_relationship: link two episodes with a typed, weighted, directed edge."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from memlake import relationships
from memlake.ids import new_id
from memlake.lake import Transaction
from memlake.models import EpisodeId, Input, Output, check_metadata
from memlake.relationships.models import TYPE_HELP, RelationshipType, Strength
from memlake.timeutil import iso, now
from memlake.tools.base import Annotations, ToolContext, ToolSpec


class AddEpisodeRelationshipInput(Input):
    from_episode_id: EpisodeId = Field(description="The earlier, causing or containing one")
    to_episode_id: EpisodeId
    relationship_type: RelationshipType = Field(description=TYPE_HELP)
    strength: Strength = 1.0
    metadata: dict[str, Any] | None = None

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_metadata(value)

    @model_validator(mode="after")
    def _no_self_loop(self) -> AddEpisodeRelationshipInput:
        if self.from_episode_id == self.to_episode_id:
            raise ValueError(
                "from_episode_id and to_episode_id are the same episode; a relationship links"
                " two different episodes"
            )
        return self


class AddEpisodeRelationshipOutput(Output):
    relationship_id: str
    from_episode_id: str
    to_episode_id: str
    relationship_type: str
    strength: float
    created_at: str
    message: str


def run(ctx: ToolContext, args: AddEpisodeRelationshipInput) -> AddEpisodeRelationshipOutput:
    new = relationships.NewRelationship(
        id=new_id(),
        from_id=args.from_episode_id,
        to_id=args.to_episode_id,
        type=args.relationship_type,
        strength=args.strength,
        metadata=args.metadata,
        created_at=now(),
        token_id=ctx.principal.token_id,
    )

    def change(txn: Transaction) -> None:
        relationships.add(txn, new)

    ctx.lake.commit(ctx.tenant, change)
    return AddEpisodeRelationshipOutput(
        relationship_id=new.id,
        from_episode_id=new.from_id,
        to_episode_id=new.to_id,
        relationship_type=new.type,
        strength=new.strength,
        created_at=iso(new.created_at) or "",
        message="Relationship added successfully",
    )


SPEC = ToolSpec(
    name="add_episode_relationship",
    title="Add episode relationship",
    description=(
        "Link two episodes from -> to. Self-links, duplicates and follows or causes"
        " cycles are refused."
    ),
    input_model=AddEpisodeRelationshipInput,
    output_model=AddEpisodeRelationshipOutput,
    annotations=Annotations(read_only=False, destructive=False, idempotent=False),
    run=run,
)
