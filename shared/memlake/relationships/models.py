"""Pydantic types shared by the relationship tools' inputs and outputs (every argument bounded)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field

from memlake.graph.model import Direction as Direction  # the one definition, re-exported
from memlake.graph.model import OrderType as OrderType
from memlake.graph.model import RelationshipType as RelationshipType
from memlake.ids import check_id
from memlake.models import Output

MAX_EPISODE_IDS = 500


def _relationship_id(value: str) -> str:
    try:
        return check_id(value, field="relationship_id", prefix="relationship")
    except Exception as e:  # becomes a pydantic error with the same message
        raise ValueError(getattr(e, "message", str(e))) from None


RelationshipId = Annotated[
    str,
    Field(min_length=1, max_length=80),
    AfterValidator(_relationship_id),
]
Strength = Annotated[
    float,
    Field(ge=0.0, le=1.0, allow_inf_nan=False),
]
TYPE_HELP = "follows: to came after from; causes: from caused to"


class Relationship(Output):
    id: str
    from_episode_id: str
    to_episode_id: str
    relationship_type: str
    strength: float
    created_at: str
    metadata: dict[str, Any] = Field(default_factory=dict)
