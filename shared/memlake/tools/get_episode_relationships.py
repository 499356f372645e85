"""get_episode_relationships: an episode's relationships, filtered by direction, type, strength."""

from __future__ import annotations

from itertools import chain

from pydantic import Field

from memlake.models import EpisodeId, Input, Output
from memlake.relationships import EdgeView, Rel, public_view
from memlake.relationships.models import Direction, Relationship, RelationshipType, Strength
from memlake.relationships.views import require_episodes
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class GetEpisodeRelationshipsInput(Input):
    episode_id: EpisodeId
    direction: Direction = Field("both", description="outgoing: the episode is from")
    relationship_type: RelationshipType | None = None
    min_strength: Strength = 0.0
    limit: int = Field(200, ge=1, le=1000)


class GetEpisodeRelationshipsOutput(Output):
    relationships: list[Relationship]
    count: int = Field(description="How many are returned")
    total: int = Field(description="How many match; more than count when limit cut the list")
    truncated: bool


def run(ctx: ToolContext, args: GetEpisodeRelationshipsInput) -> GetEpisodeRelationshipsOutput:
    snap = ctx.lake.snapshot(ctx.tenant)
    require_episodes(snap, [args.episode_id], field="episode_id")
    edges = EdgeView.of_snapshot(snap)
    found: chain[Rel] = chain(
        edges.outgoing(args.episode_id) if args.direction != "incoming" else (),
        edges.incoming(args.episode_id) if args.direction != "outgoing" else (),
    )
    matching = [
        rel
        for rel in found
        if rel.strength >= args.min_strength
        and (args.relationship_type is None or rel.type == args.relationship_type)
    ]
    matching.sort(key=lambda rel: rel.id, reverse=True)
    page = matching[: args.limit]
    return GetEpisodeRelationshipsOutput(
        relationships=[Relationship(**public_view(rel)) for rel in page],
        count=len(page),
        total=len(matching),
        truncated=len(matching) > len(page),
    )


SPEC = ToolSpec(
    name="get_episode_relationships",
    title="Get episode relationships",
    description=(
        "An episode's direct relationships, newest first. To follow links further, use"
        " find_related_episodes."
    ),
    input_model=GetEpisodeRelationshipsInput,
    output_model=GetEpisodeRelationshipsOutput,
    annotations=READ_ONLY,
    run=run,
)
