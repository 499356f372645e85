"""find_related_episodes: episodes reachable within a few hops, ranked by path strength."""

from __future__ import annotations

from pydantic import Field

from memlake.graph import MAX_RELATED_DEPTH
from memlake.graph.arrays import find_related_arrays
from memlake.models import EpisodeId, Input, Output
from memlake.relationships import relationship_index
from memlake.relationships.models import Direction, RelationshipType
from memlake.relationships.views import arc_arrays, episode_nodes, require_episodes
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class FindRelatedEpisodesInput(Input):
    episode_id: EpisodeId
    max_depth: int = Field(2, ge=1, le=MAX_RELATED_DEPTH)
    relationship_types: list[RelationshipType] | None = Field(None, max_length=6)
    min_strength: float = Field(
        0.5,
        gt=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="Least path strength to keep",
    )
    direction: Direction = Field("both", description="outgoing: from -> to")
    limit: int = Field(100, ge=1, le=1000)


class RelatedEpisode(Output):
    episode_id: str
    episode_name: str = Field(description="Summary, else the start of the content")
    distance: int = Field(description="Hops on the strongest path, 1-5")
    path: list[str] = Field(description="Relationship ids along that path, from episode_id")
    total_strength: float = Field(description="Product of the strengths along the path")


class FindRelatedEpisodesOutput(Output):
    related_episodes: list[RelatedEpisode]
    count: int
    total: int = Field(description="How many qualify; more than count when limit cut the list")
    truncated: bool


def run(ctx: ToolContext, args: FindRelatedEpisodesInput) -> FindRelatedEpisodesOutput:
    snap = ctx.lake.snapshot(ctx.tenant)
    require_episodes(snap, [args.episode_id], field="episode_id")
    index = relationship_index(snap)
    types = frozenset(args.relationship_types) if args.relationship_types else None
    page, total = find_related_arrays(
        arc_arrays(index, args.direction, types),
        args.episode_id,
        max_depth=args.max_depth,
        min_strength=args.min_strength,
        limit=args.limit,
    )
    names = episode_nodes(snap, (item.episode_id for item in page))
    related = [
        RelatedEpisode(
            episode_id=item.episode_id,
            episode_name=names[item.episode_id].label if item.episode_id in names else "",
            distance=item.distance,
            path=list(item.path),
            total_strength=item.total_strength,
        )
        for item in page
    ]
    return FindRelatedEpisodesOutput(
        related_episodes=related,
        count=len(related),
        total=total,
        truncated=total > len(page),
    )


SPEC = ToolSpec(
    name="find_related_episodes",
    title="Find related episodes",
    description=("Episodes reachable from one within max_depth hops, strongest path first."),
    input_model=FindRelatedEpisodesInput,
    output_model=FindRelatedEpisodesOutput,
    annotations=READ_ONLY,
    run=run,
)
