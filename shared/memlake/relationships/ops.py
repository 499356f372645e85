"""Changing the relationship graph inside a lake transaction.

Every check runs inside the commit function against the snapshot being committed plus the
rows already staged in the transaction: a writer that loses the conditional manifest write is
re-run against the newer snapshot, and writers batched by group commit see each other's staged
rows, so two changes that together break a rule (a duplicate, a cycle) cannot both commit.
Each change stages its audit record in the same transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memlake import audit
from memlake.episodes import TABLE as EPISODES
from memlake.errors import AlreadyExists, Conflict, InvalidArgument, NotFound
from memlake.graph import ACYCLIC_TYPES
from memlake.lake.txn import Transaction
from memlake.relationships.index import EdgeView
from memlake.relationships.table import TABLE, Rel, rel_from_row

ORDER_TYPES = ACYCLIC_TYPES  # follows, causes: "from comes before to"; must stay acyclic
MAX_PATH_IN_MESSAGE = 12


def describe_path(path: list[str]) -> str:
    if len(path) <= MAX_PATH_IN_MESSAGE:
        return " -> ".join(path)
    head = " -> ".join(path[: MAX_PATH_IN_MESSAGE - 2])
    return f"{head} -> ... ({len(path) - MAX_PATH_IN_MESSAGE + 1} more) -> {path[-1]}"


def episode_not_found(field: str, episode_id: str) -> NotFound:
    return NotFound(
        f"{field} {episode_id}: no such episode",
        hint="Use an id returned by add_episode or list_episodes; both episodes must exist.",
    )


@dataclass(frozen=True)
class NewRelationship:
    id: str
    from_id: str
    to_id: str
    type: str
    strength: float
    metadata: dict[str, Any] | None
    created_at: datetime
    token_id: str

    def row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "from_id": self.from_id,
            "to_id": self.to_id,
            "type": self.type,
            "strength": self.strength,
            "metadata": json.dumps(self.metadata, ensure_ascii=False) if self.metadata else None,
            "created_at": self.created_at,
            "created_by": self.token_id,
        }


def add(txn: Transaction, new: NewRelationship) -> None:
    """Stage new after checking existence, self-loops, duplicates and (ordering types) cycles."""
    if new.from_id == new.to_id:
        raise InvalidArgument(
            "from_episode_id and to_episode_id are the same episode",
            hint="A relationship links two different episodes.",
        )
    if not txn.exists(EPISODES, new.from_id):
        raise episode_not_found("from_episode_id", new.from_id)
    if not txn.exists(EPISODES, new.to_id):
        raise episode_not_found("to_episode_id", new.to_id)
    edges = EdgeView.of_txn(txn)
    existing = edges.find(new.from_id, new.to_id, new.type)
    if existing is not None:
        raise AlreadyExists(
            f"a {new.type} relationship from {new.from_id} to {new.to_id} already exists"
            f" (id {existing.id})",
            hint="Keep it, or remove_episode_relationship it first to change strength/metadata.",
        )
    if new.type in ORDER_TYPES:
        cycle = edges.cycle_if_added(new.from_id, new.to_id)
        if cycle is not None:
            raise Conflict(
                f"adding {new.type} {new.from_id} -> {new.to_id} would close the cycle"
                f" {describe_path(cycle)}; follows and causes must stay acyclic",
                hint="Check with validate_no_cycles first, or use related_to for a loose link.",
            )
    txn.put(TABLE, new.row())
    details = {"strength": new.strength, "metadata": new.metadata or {}}
    _audit(txn, "add_relationship", new, details, token_id=new.token_id)


def remove(txn: Transaction, relationship_id: str, token_id: str) -> Rel:
    """Tombstone a live relationship; NotFound says whether it was already removed."""
    row = txn.get(TABLE, relationship_id)
    if row is None:
        loc = txn.snapshot.table(TABLE).locate(relationship_id)
        staged = dict(txn.staged_rows(TABLE))
        gone = (loc is not None and loc.deleted) or (relationship_id in staged)
        raise NotFound(
            f"relationship {relationship_id} was already removed"
            if gone
            else f"relationship {relationship_id} not found",
            hint="get_episode_relationships lists an episode's current relationships.",
        )
    rel = rel_from_row(row)
    txn.delete(TABLE, rel.id)
    _audit(txn, "remove_relationship", rel, {"strength": rel.strength}, token_id=token_id)
    return rel


def cascade_delete(txn: Transaction, episode_id: str) -> None:
    """Episode-delete cleanup (memlake.features): remove every relationship of a deleted episode."""
    for rel in EdgeView.of_txn(txn).touching(episode_id):
        txn.delete(TABLE, rel.id)
        details = {"deleted_episode_id": episode_id, "strength": rel.strength}
        _audit(txn, "cascade_delete", rel, details)


def _audit(
    txn: Transaction,
    action: str,
    rel: Rel | NewRelationship,
    details: dict[str, Any],
    *,
    token_id: str | None = None,
) -> None:
    """Stage the audit record of a change to `rel` in the change's own transaction."""
    audit.record(
        txn,
        action,
        token_id=token_id,
        relationship_id=rel.id,
        from_id=rel.from_id,
        to_id=rel.to_id,
        type=rel.type,
        details=details,
    )
