"""Episode relationship graph: value types, pure algorithms and exporters (no I/O)."""

from memlake.graph.algorithms import (
    MAX_RELATED_DEPTH,
    Neighbours,
    find_related,
    find_related_from,
    reachable,
    shortest_path,
    topological_order,
)
from memlake.graph.export import GraphNode, normalize_label, to_dot, to_json, to_mermaid
from memlake.graph.model import (
    ACYCLIC_TYPES,
    DIRECTIONS,
    RELATIONSHIP_TYPES,
    Direction,
    Edge,
    OrderedNode,
    Related,
    TopologicalOrder,
)

__all__ = [
    "ACYCLIC_TYPES",
    "DIRECTIONS",
    "MAX_RELATED_DEPTH",
    "RELATIONSHIP_TYPES",
    "Direction",
    "Edge",
    "GraphNode",
    "Neighbours",
    "OrderedNode",
    "Related",
    "TopologicalOrder",
    "find_related",
    "find_related_from",
    "normalize_label",
    "reachable",
    "shortest_path",
    "to_dot",
    "to_json",
    "to_mermaid",
    "topological_order",
]
