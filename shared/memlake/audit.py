"""The audit trail: one append-only row per change to the relationship graph.

Rows live in the lake's "audit" table, written in the same transaction as the change they
describe, so a change and its record commit (or vanish) together. Nothing deletes or updates
an audit row; compaction keeps every one. The Parquet is plain (timestamps in UTC, details as
JSON text), so DuckDB or Athena can read the trail as it is.

Who acted: tools pass ctx.principal.token_id (a non-secret digest of the bearer token). Code
that runs on behalf of another tool (the episode-delete cascade) reads the caller set with
:func:`acting_as`; outside any tool call the actor is "system".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from memlake.ids import new_id
from memlake.lake.schema import SYSTEM_FIELDS, TS, TableSpec
from memlake.lake.snapshot import Snapshot
from memlake.lake.txn import Transaction
from memlake.timeutil import iso, now

TABLE = "audit"
ACTIONS = ("add_relationship", "remove_relationship", "cascade_delete")


def _schema(_dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("created_at", TS),  # "at" would need quoting in SQL
            pa.field("tenant", pa.string()),
            pa.field("token_id", pa.string()),
            pa.field("action", pa.string()),
            pa.field("relationship_id", pa.string()),
            pa.field("from_id", pa.string()),
            pa.field("to_id", pa.string()),
            pa.field("type", pa.string()),
            pa.field("details", pa.string()),  # JSON object text
            *SYSTEM_FIELDS,
        ]
    )


SPEC = TableSpec(TABLE, _schema, ("created_at", "action"))

_actor: ContextVar[str] = ContextVar("memlake_audit_actor", default="system")


@contextmanager
def acting_as(token_id: str) -> Iterator[None]:
    """Attribute audit records written inside this block (in this thread) to token_id."""
    token = _actor.set(token_id)
    try:
        yield
    finally:
        _actor.reset(token)


def current_actor() -> str:
    return _actor.get()


def record(
    txn: Transaction,
    action: str,
    *,
    token_id: str | None = None,
    relationship_id: str | None = None,
    from_id: str | None = None,
    to_id: str | None = None,
    type: str | None = None,
    details: dict[str, Any] | None = None,
) -> str:
    """Stage one audit row in txn; returns its id."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")
    row_id = new_id()
    txn.put(
        TABLE,
        {
            "id": row_id,
            "created_at": now(),
            "tenant": txn.snapshot.tenant,
            "token_id": token_id if token_id is not None else current_actor(),
            "action": action,
            "relationship_id": relationship_id,
            "from_id": from_id,
            "to_id": to_id,
            "type": type,
            "details": json.dumps(details or {}, ensure_ascii=False, separators=(",", ":")),
        },
    )
    return row_id


def public_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "created_at": iso(row["created_at"]),
        "tenant": row["tenant"],
        "token_id": row["token_id"],
        "action": row["action"],
        "relationship_id": row["relationship_id"],
        "from_episode_id": row["from_id"],
        "to_episode_id": row["to_id"],
        "relationship_type": row["type"],
        "details": json.loads(row["details"]) if row.get("details") else {},
    }


def newest_first(
    snap: Snapshot,
    *,
    limit: int,
    before_id: str | None = None,
    relationship_id: str | None = None,
    episode_id: str | None = None,
    action: str | None = None,
) -> tuple[list[dict[str, Any]], bool]:
    """Up to limit records, newest first (ids sort by time), and whether more follow."""
    table = snap.table(TABLE).live_table()
    masks = []
    if before_id is not None:
        masks.append(pc.less(table.column("id"), before_id))
    if relationship_id is not None:
        masks.append(pc.equal(table.column("relationship_id"), relationship_id))
    if episode_id is not None:
        masks.append(
            pc.or_kleene(
                pc.equal(table.column("from_id"), episode_id),
                pc.equal(table.column("to_id"), episode_id),
            )
        )
    if action is not None:
        masks.append(pc.equal(table.column("action"), action))
    if masks:  # every mask is over the full table: combine them, then filter once
        keep = pc.fill_null(masks[0], False)
        for mask in masks[1:]:
            keep = pc.and_(keep, pc.fill_null(mask, False))
        table = table.filter(keep)
    top = pc.select_k_unstable(table, limit + 1, [("id", "descending")])
    rows = table.take(top).to_pylist()
    return [public_view(r) for r in rows[:limit]], len(rows) > limit
