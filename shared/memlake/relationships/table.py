"""The "relationships" table: one row per directed, typed, weighted edge between episodes.

An edge from_id -> to_id orders from_id before to_id (see docs/decisions/0601). Removing an
edge writes a tombstone; ids are server-generated (new_id), so a removed edge never comes back.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import pyarrow as pa

from memlake.lake.schema import SYSTEM_FIELDS, TS, TableSpec
from memlake.timeutil import iso

TABLE = "relationships"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _schema(_dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("from_id", pa.string()),
            pa.field("to_id", pa.string()),
            pa.field("type", pa.string()),
            pa.field("strength", pa.float64()),
            pa.field("metadata", pa.string()),  # JSON object text
            pa.field("created_at", TS),
            pa.field("created_by", pa.string()),  # token id of the caller
            *SYSTEM_FIELDS,
        ]
    )


SPEC = TableSpec(TABLE, _schema, ("type", "created_at"))


class Rel(NamedTuple):
    """A live relationship as the in-memory index holds it."""

    id: str
    from_id: str
    to_id: str
    type: str
    strength: float
    created_us: int  # microseconds since the epoch, UTC
    metadata: str | None  # JSON object text

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.from_id, self.to_id, self.type)


def micros(value: datetime) -> int:
    return (value - _EPOCH) // timedelta(microseconds=1)


def from_micros(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def rel_from_row(row: dict[str, Any]) -> Rel:
    """A Rel from a row dict as staged in a transaction."""
    return Rel(
        row["id"],
        row["from_id"],
        row["to_id"],
        row["type"],
        float(row["strength"]),
        micros(row["created_at"]),
        row.get("metadata"),
    )


def public_view(rel: Rel) -> dict[str, Any]:
    """A relationship as tools return it (JSON-ready)."""
    return {
        "id": rel.id,
        "from_episode_id": rel.from_id,
        "to_episode_id": rel.to_id,
        "relationship_type": rel.type,
        "strength": rel.strength,
        "created_at": iso(from_micros(rel.created_us)),
        "metadata": json.loads(rel.metadata) if rel.metadata else {},
    }
