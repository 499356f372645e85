"""get_topological_order: episodes in dependency order (Kahn's algorithm, with levels)."""

from __future__ import annotations

from pydantic import Field

from memlake.models import EpisodeId, Input, Output
from memlake.relationships import relationship_index
from memlake.relationships.models import MAX_EPISODE_IDS, OrderType
from memlake.relationships.views import episode_nodes, order_of
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec

MAX_DEPENDENCIES_LISTED = 100
MAX_CYCLES_LISTED = 20


class GetTopologicalOrderInput(Input):
    episode_ids: list[EpisodeId] | None = Field(
        None,
        max_length=MAX_EPISODE_IDS,
        description="Omit for every linked episode",
    )
    relationship_type: OrderType = "follows"
    limit: int = Field(500, ge=1, le=1000)


class OrderedEpisode(Output):
    episode_id: str
    episode_name: str
    level: int = Field(description="0 = depends on nothing; else 1 + the deepest dependency")
    dependencies: list[str] = Field(
        default_factory=list, description="Episodes this one directly depends on (<= 100)"
    )
    dependency_count: int


class GetTopologicalOrderOutput(Output):
    ordered_episodes: list[OrderedEpisode]
    count: int
    total: int = Field(description="Episodes placed in order; more than count when limit cut")
    truncated: bool
    has_cycles: bool
    cycles: list[list[str]] = Field(description="One cycle per tangle (<= 20); empty for a DAG")


def run(ctx: ToolContext, args: GetTopologicalOrderInput) -> GetTopologicalOrderOutput:
    snap = ctx.lake.snapshot(ctx.tenant)
    order = order_of(snap, relationship_index(snap), args.episode_ids, args.relationship_type)
    page = order.ordered[: args.limit]
    names = episode_nodes(snap, (node.episode_id for node in page))
    ordered = [
        OrderedEpisode(
            episode_id=node.episode_id,
            episode_name=names[node.episode_id].label if node.episode_id in names else "",
            level=node.level,
            dependencies=list(node.dependencies[:MAX_DEPENDENCIES_LISTED]),
            dependency_count=len(node.dependencies),
        )
        for node in page
    ]
    return GetTopologicalOrderOutput(
        ordered_episodes=ordered,
        count=len(ordered),
        total=len(order.ordered),
        truncated=len(order.ordered) > len(ordered),
        has_cycles=order.has_cycles,
        cycles=order.cycles[:MAX_CYCLES_LISTED],
    )


SPEC = ToolSpec(
    name="get_topological_order",
    title="Get topological order",
    description=(
        "Episodes in dependency order by follows or causes links, with levels; reports cycles."
    ),
    input_model=GetTopologicalOrderInput,
    output_model=GetTopologicalOrderOutput,
    annotations=READ_ONLY,
    run=run,
)
