"""get_dependency_graph: the relationship graph as JSON, Graphviz DOT or a Mermaid flowchart."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from memlake.graph import to_dot, to_json, to_mermaid
from memlake.models import KEEP_EMPTY, EpisodeId, Input, Output
from memlake.relationships import relationship_index
from memlake.relationships.models import MAX_EPISODE_IDS, RelationshipType
from memlake.relationships.views import select_graph
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec

MAX_NODES = 500
MAX_EDGES = 2000
MERMAID_MAX_EDGES = 500  # Mermaid's default maxEdges: a bigger flowchart does not render


class GetDependencyGraphInput(Input):
    episode_ids: list[EpisodeId] | None = Field(
        None,
        max_length=MAX_EPISODE_IDS,
    )
    relationship_types: list[RelationshipType] | None = Field(None, max_length=6)
    format: Literal["json", "graphviz", "mermaid"] = "json"
    max_nodes: int = Field(100, ge=1, le=MAX_NODES)


class GraphNodeOut(Output):
    id: str
    label: str
    created_at: str | None = None


class GraphEdgeOut(Output):
    model_config = ConfigDict(extra="forbid", serialize_by_alias=True, validate_by_name=True)

    id: str
    from_: str = Field(alias="from")
    to: str
    type: str
    strength: float


class GetDependencyGraphOutput(Output):
    format: str
    nodes: Annotated[list[GraphNodeOut] | None, KEEP_EMPTY] = Field(
        None, description="json format only"
    )
    edges: Annotated[list[GraphEdgeOut] | None, KEEP_EMPTY] = Field(
        None, description="json format only"
    )
    graph: str | None = Field(
        None, description="The DOT or Mermaid text (graphviz/mermaid formats)"
    )
    node_count: int
    edge_count: int
    truncated: bool = Field(description="True when max_nodes left qualifying episodes out")
    edges_truncated: bool = Field(description="True when the edge cap left relationships out")
    message: str


def run(ctx: ToolContext, args: GetDependencyGraphInput) -> GetDependencyGraphOutput:
    snap = ctx.lake.snapshot(ctx.tenant)
    types = frozenset(args.relationship_types) if args.relationship_types else None
    max_edges = MERMAID_MAX_EDGES if args.format == "mermaid" else MAX_EDGES
    chosen = select_graph(
        snap, relationship_index(snap), args.episode_ids, types, args.max_nodes, max_edges
    )
    truncated = chosen.candidate_nodes > len(chosen.nodes)
    edges_truncated = chosen.candidate_edges > len(chosen.edges)
    notes = [f"{len(chosen.nodes)} episodes, {len(chosen.edges)} relationships"]
    if truncated:
        notes.append(
            f"max_nodes kept {len(chosen.nodes)} of {chosen.candidate_nodes} episodes"
            + ("" if args.episode_ids else " (most connected first)")
        )
    if edges_truncated:
        notes.append(
            f"kept the {len(chosen.edges)} strongest of {chosen.candidate_edges} relationships"
            + (" (Mermaid renders at most 500 edges)" if args.format == "mermaid" else "")
        )
    nodes = edges = graph = None
    if args.format == "json":
        data = to_json(chosen.nodes, chosen.edges)
        nodes = [GraphNodeOut(**node) for node in data["nodes"]]
        edges = [GraphEdgeOut.model_validate(edge) for edge in data["edges"]]
    elif args.format == "graphviz":
        graph = to_dot(chosen.nodes, chosen.edges)
    else:
        graph = to_mermaid(chosen.nodes, chosen.edges)
    return GetDependencyGraphOutput(
        format=args.format,
        nodes=nodes,
        edges=edges,
        graph=graph,
        node_count=len(chosen.nodes),
        edge_count=len(chosen.edges),
        truncated=truncated,
        edges_truncated=edges_truncated,
        message="; ".join(notes),
    )


SPEC = ToolSpec(
    name="get_dependency_graph",
    title="Get dependency graph",
    description=(
        "Draw the given episodes (else the most connected) and their relationships as"
        " json, graphviz or mermaid."
    ),
    input_model=GetDependencyGraphInput,
    output_model=GetDependencyGraphOutput,
    annotations=READ_ONLY,
    run=run,
)
