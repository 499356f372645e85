"""Value types for the episode relationship graph.

An edge ``from_id -> to_id`` orders ``from_id`` before ``to_id`` (``to_id`` depends on
``from_id``) for every relationship type. Only the types in :data:`ACYCLIC_TYPES` are meant
to be kept free of directed cycles; the algorithms themselves never filter by type unless
asked to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

RelationshipType = Literal["follows", "causes", "part_of", "related_to", "contradicts", "refines"]
#: the ordering types ("from comes before to"), which must stay acyclic
OrderType = Literal["follows", "causes"]
RELATIONSHIP_TYPES: tuple[RelationshipType, ...] = get_args(RelationshipType)
ACYCLIC_TYPES: frozenset[str] = frozenset(get_args(OrderType))

Direction = Literal["outgoing", "incoming", "both"]
DIRECTIONS: tuple[Direction, ...] = ("outgoing", "incoming", "both")


@dataclass(frozen=True, slots=True)
class Edge:
    """A directed, typed, weighted relationship between two episodes."""

    id: str
    from_id: str
    to_id: str
    type: str
    strength: float

    def __post_init__(self) -> None:
        # Written so that NaN fails too. find_related relies on strengths being in [0, 1].
        if not (isinstance(self.strength, int | float) and 0.0 <= self.strength <= 1.0):
            raise ValueError(f"edge {self.id!r}: strength must be in [0, 1], got {self.strength!r}")


@dataclass(frozen=True, slots=True)
class Related:
    """An episode reached by :func:`find_related` through its strongest path."""

    episode_id: str
    distance: int
    path: tuple[str, ...]
    total_strength: float


@dataclass(frozen=True, slots=True)
class OrderedNode:
    """A node placed by :func:`topological_order`."""

    episode_id: str
    level: int
    dependencies: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TopologicalOrder:
    """Result of :func:`topological_order`; ``cycles`` is empty when the graph is a DAG."""

    ordered: list[OrderedNode]
    has_cycles: bool
    cycles: list[list[str]]
