"""Concepts (the seeds' entities): named, typed knowledge with an optional parent.

The hierarchy is a forest: setting a parent walks the new parent's ancestors inside the commit
function, so a cycle is refused with its path even when two agents re-parent at once (the
loser re-runs against the winner's state). Episode links live in concept_links (links.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from memlake.cursors import Pager
from memlake.errors import Conflict, InvalidArgument, NotFound
from memlake.lake.snapshot import Snapshot
from memlake.lake.txn import Transaction
from memlake.layers.fields import MAX_HIERARCHY_DEPTH
from memlake.layers.tables import CONCEPTS, LINKS
from memlake.timeutil import iso

DEFAULT_KIND = "concept"
FIELDS = ("name", "kind", "description", "parent_id")


def not_found(concept_id: str) -> NotFound:
    return NotFound(
        f"concept {concept_id} not found",
        hint="Check the id, or use find_concepts to find concepts (upsert_concept creates one).",
    )


def view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row.get("name") or "",
        "kind": row.get("kind") or DEFAULT_KIND,
        "description": row.get("description"),
        "parent_id": row.get("parent_id"),
        "created_at": iso(row.get("created_at")),
        "updated_at": iso(row.get("updated_at")),
    }


def check_parent(txn: Transaction, concept_id: str, parent_id: str) -> None:
    """Refuse a missing parent, the concept itself, or a parent below the concept."""
    if parent_id == concept_id:
        raise Conflict(
            f"concept {concept_id} cannot be its own parent",
            hint="Pass another concept's id as parent_id, or null for a top-level concept.",
        )
    path = [concept_id, parent_id]
    current = parent_id
    for _ in range(MAX_HIERARCHY_DEPTH):
        row = txn.get(CONCEPTS, current)
        if row is None:
            raise not_found(current)
        above = row.get("parent_id")
        if above is None:
            return
        if above == concept_id:
            raise Conflict(
                f"parent_id {parent_id} would make a cycle: {' -> '.join([*path, concept_id])}",
                hint="A concept cannot sit below one of its own descendants; choose another"
                " parent_id.",
            )
        path.append(above)
        current = above
    raise InvalidArgument(
        f"the hierarchy above {parent_id} is deeper than {MAX_HIERARCHY_DEPTH} levels",
        hint="Attach the concept nearer the top of the hierarchy.",
    )


def upsert(
    txn: Transaction, concept_id: str, given: dict[str, Any], at: datetime
) -> tuple[dict[str, Any], bool]:
    """Create or update; keys of `given` replace, omitted fields keep. Returns (row, created)."""
    existing = txn.get(CONCEPTS, concept_id)
    created = existing is None
    if created:
        if not given.get("name"):
            raise InvalidArgument(
                f"name is required to create concept {concept_id}",
                hint="Pass name (and optionally kind, description, parent_id).",
            )
        row: dict[str, Any] = {
            "id": concept_id,
            "kind": DEFAULT_KIND,
            "description": None,
            "parent_id": None,
            "created_at": at,
        }
    else:
        row = dict(existing)  # type: ignore[arg-type]
    for key in FIELDS:
        if key in given:
            if key in ("name", "kind") and given[key] is None:
                raise InvalidArgument(f"{key} cannot be null", hint=f"Pass a {key} or omit it.")
            row[key] = given[key]
    parent = row.get("parent_id")
    if parent is not None and ("parent_id" in given or created):
        check_parent(txn, concept_id, parent)
    row["updated_at"] = at
    txn.put(CONCEPTS, row)
    return row, created


def children(source: Snapshot | Transaction, concept_id: str) -> list[dict[str, Any]]:
    return sorted(source.where(CONCEPTS, "parent_id", [concept_id]), key=lambda r: r["id"])


def delete(txn: Transaction, concept_id: str) -> tuple[int, int]:
    """Delete a concept and its episode links. Returns (deleted 0/1, links removed)."""
    if not txn.exists(CONCEPTS, concept_id):
        return 0, 0
    kids = children(txn, concept_id)
    if kids:
        names = ", ".join(k["id"] for k in kids[:5]) + (", ..." if len(kids) > 5 else "")
        raise Conflict(
            f"concept {concept_id} has {len(kids)} child concept(s): {names}",
            hint="Re-parent them with upsert_concept(parent_id=...) or delete them first.",
        )
    links = txn.where(LINKS, "concept_id", [concept_id])
    for link in links:
        txn.delete(LINKS, link["id"])
    txn.delete(CONCEPTS, concept_id)
    return 1, len(links)


def ancestors(snap: Snapshot, row: dict[str, Any]) -> list[dict[str, Any]]:
    """Parent, grandparent, ... up to the root (bounded by the hierarchy depth limit)."""
    out: list[dict[str, Any]] = []
    view_ = snap.table(CONCEPTS)
    current = row.get("parent_id")
    while current is not None and len(out) < MAX_HIERARCHY_DEPTH:
        parent = view_.get(current)
        if parent is None:
            break
        out.append({"id": parent["id"], "name": parent.get("name") or ""})
        current = parent.get("parent_id")
    return out


def _all_of(masks: list[Any]) -> Any:
    combined = pc.fill_null(masks[0], False)
    for mask in masks[1:]:
        combined = pc.and_(combined, pc.fill_null(mask, False))
    return combined


def find_page(
    snap: Snapshot,
    *,
    query: str | None,
    kind: str | None,
    parent_id: str | None,
    concept_ids: list[str] | None,
    limit: int,
    cursor: str | None,
    pager: Pager,
) -> tuple[list[dict[str, Any]], str | None]:
    """Concepts by name (case-insensitive, then id), filtered; keyset cursor on (name, id)."""
    table = snap.table(CONCEPTS).live_table(partial=True)  # find_concepts notes the rest
    masks = []
    if query:
        name_hit = pc.match_substring(table.column("name"), query, ignore_case=True)
        desc_hit = pc.match_substring(table.column("description"), query, ignore_case=True)
        masks.append(pc.or_kleene(pc.fill_null(name_hit, False), pc.fill_null(desc_hit, False)))
    if kind is not None:
        masks.append(pc.equal(table.column("kind"), kind))
    if parent_id is not None:
        masks.append(pc.equal(table.column("parent_id"), parent_id))
    if concept_ids is not None:
        masks.append(pc.is_in(table.column("id"), value_set=pa.array(concept_ids, pa.string())))
    if masks:  # every mask is over the full table: combine them, then filter once
        table = table.filter(_all_of(masks))
    table = table.append_column("__name", pc.utf8_lower(pc.fill_null(table.column("name"), "")))
    if cursor:
        last_name, last_id = pager.decode(cursor)
        after = pc.or_(
            pc.greater(table.column("__name"), last_name),
            pc.and_(
                pc.equal(table.column("__name"), last_name), pc.greater(table.column("id"), last_id)
            ),
        )
        table = table.filter(after)
    rows = table.sort_by([("__name", "ascending"), ("id", "ascending")]).slice(0, limit + 1)
    page = rows.to_pylist()
    more = len(page) > limit
    page = page[:limit]
    next_cursor = pager.encode([page[-1]["__name"], page[-1]["id"]]) if more else None
    return page, next_cursor
