"""Episode <-> concept links (ADR-007 section 3; seed 000's extracted_from with position and
confidence).

Both directions are read from one table, concept_links (one row per pair, its id derived from
the pair): an episode's concept_ids and a concept's episode_ids are two filters over the same
rows, so they cannot disagree, and a link is one row written in one commit
(docs/decisions/0501).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memlake import episodes
from memlake.errors import NotFound
from memlake.lake.snapshot import Snapshot
from memlake.lake.txn import Transaction
from memlake.layers import concepts
from memlake.layers.tables import CONCEPTS, LINKS, link_id
from memlake.timeutil import iso, now

DEFAULT_CONFIDENCE = 1.0


def _episode_order(link: dict[str, Any]) -> tuple[Any, ...]:
    pos = link.get("position")
    return (pos is None, pos if pos is not None else 0, link.get("created_at"), link["concept_id"])


def _concept_order(link: dict[str, Any]) -> tuple[Any, ...]:
    return (link.get("created_at"), link["episode_id"])


def links_of_episode(source: Snapshot | Transaction, episode_id: str) -> list[dict[str, Any]]:
    """The episode's links, by position (unset last), then link time."""
    return sorted(source.where(LINKS, "episode_id", [episode_id]), key=_episode_order)


def links_of_concept(source: Snapshot | Transaction, concept_id: str) -> list[dict[str, Any]]:
    """The concept's links, oldest first."""
    return sorted(source.where(LINKS, "concept_id", [concept_id]), key=_concept_order)


def concept_ids_by_episode(snap: Snapshot, episode_ids: Iterable[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for link in snap.where(LINKS, "episode_id", episode_ids):
        grouped.setdefault(link["episode_id"], []).append(link)
    return {
        e: [lk["concept_id"] for lk in sorted(v, key=_episode_order)] for e, v in grouped.items()
    }


def _require(txn: Transaction, episode_id: str, concept_id: str) -> None:
    if not txn.exists(episodes.TABLE, episode_id):
        raise episodes.not_found(episode_id)
    if not txn.exists(CONCEPTS, concept_id):
        raise concepts.not_found(concept_id)


def _stage(
    txn: Transaction, episode_id: str, concept_id: str, position: int | None, confidence: float
) -> bool:
    """Write the link (or update its position/confidence). Returns True when it is new."""
    lid = link_id(concept_id, episode_id)
    existing = txn.find(LINKS, lid)
    row = {
        "id": lid,
        "concept_id": concept_id,
        "episode_id": episode_id,
        "position": position,
        "confidence": confidence,
        "created_at": existing["created_at"] if existing else now(),
    }
    if existing is None or any(existing.get(k) != row[k] for k in ("position", "confidence")):
        txn.put(LINKS, row)
    return existing is None


def link(
    txn: Transaction, episode_id: str, concept_id: str, position: int | None, confidence: float
) -> bool:
    _require(txn, episode_id, concept_id)
    return _stage(txn, episode_id, concept_id, position, confidence)


def unlink(txn: Transaction, episode_id: str, concept_id: str) -> int:
    _require(txn, episode_id, concept_id)
    lid = link_id(concept_id, episode_id)
    if txn.find(LINKS, lid) is None:
        return 0
    txn.delete(LINKS, lid)
    return 1


def link_extracted(txn: Transaction, episode_id: str, entity_ids: list[str]) -> list[str]:
    """add_episode's entity_ids: link each existing concept at its position with confidence 1.0
    (seed 000's extracted_from). Returns the ids that are not concepts (not linked)."""
    missing = []
    for position, concept_id in enumerate(entity_ids):
        if txn.exists(CONCEPTS, concept_id):
            _stage(txn, episode_id, concept_id, position, DEFAULT_CONFIDENCE)
        else:
            missing.append(concept_id)
    return missing


def set_episode_concepts(
    txn: Transaction, episode_id: str, concept_ids: list[str]
) -> tuple[int, int]:
    """Make the episode's links exactly `concept_ids` (upsert_episode). Every id must be a
    concept, else nothing changes. Kept links keep their confidence. Returns (added, removed)."""
    missing = [c for c in concept_ids if not txn.exists(CONCEPTS, c)]
    if missing:
        raise NotFound(
            f"concept_ids not found: {', '.join(missing[:10])}",
            hint="Create them with upsert_concept first, or drop them from concept_ids.",
        )
    current = {lk["concept_id"]: lk for lk in txn.where(LINKS, "episode_id", [episode_id])}
    removed = 0
    for concept_id in set(current) - set(concept_ids):
        txn.delete(LINKS, current[concept_id]["id"])
        removed += 1
    added = 0
    for position, concept_id in enumerate(concept_ids):
        old = current.get(concept_id)
        confidence = old["confidence"] if old and old.get("confidence") is not None else 1.0
        added += _stage(txn, episode_id, concept_id, position, confidence)
    return added, removed


def linked_concepts(snap: Snapshot, episode_id: str) -> list[dict[str, Any]]:
    """The episode's concepts with the link's position, confidence and time."""
    links = links_of_episode(snap, episode_id)
    rows = {r["id"]: r for r in snap.table(CONCEPTS).rows([lk["concept_id"] for lk in links])}
    return [
        {**concepts.view(rows[lk["concept_id"]]), **link_fields(lk)}
        for lk in links
        if lk["concept_id"] in rows
    ]


def link_fields(link_row: dict[str, Any]) -> dict[str, Any]:
    return {
        "position": link_row.get("position"),
        "confidence": link_row.get("confidence"),
        "linked_at": iso(link_row.get("created_at")),
    }


def both_sides(
    source: Snapshot | Transaction, episode_id: str, concept_id: str, max_ids: int = 1_000
) -> dict[str, Any]:
    """The episode's concept_ids and the concept's episode_ids, from the same link rows."""
    of_concept = links_of_concept(source, concept_id)
    return {
        "concept_ids": [lk["concept_id"] for lk in links_of_episode(source, episode_id)],
        "episode_ids": [lk["episode_id"] for lk in of_concept[:max_ids]],
        "episode_count": len(of_concept),
    }
