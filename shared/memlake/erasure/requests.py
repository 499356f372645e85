"""The `erasures` table: one row per erased episode or thread, a request until a maintenance
pass has removed it from every object, then its receipt.

A row holds ids and counts, never content: `id` is the erased target's id, `kind` episode or
thread, `requested_seq` the commit version of the delete (versions of the target written at
or before it are erased; a later one, the same id stored again, is not). The pass updates the
row to `erased` with what it rewrote and removed; the row is kept (the audit of an erasure).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from memlake.episodes import TABLE as EPISODES
from memlake.lake.schema import SYSTEM_FIELDS, TS, TableSpec
from memlake.lake.snapshot import Snapshot
from memlake.lake.txn import Transaction
from memlake.timeutil import now

TABLE = "erasures"
Kind = Literal["episode", "thread"]
PENDING, ERASED = "pending", "erased"


def _schema(_dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),  # the erased episode's or thread's id
            pa.field("kind", pa.string()),
            pa.field("status", pa.string()),  # pending | erased
            pa.field("requested_at", TS),
            pa.field("requested_seq", pa.int64()),
            pa.field("reason", pa.string()),  # delete | retention
            # when the target was first written (the oldest history an erasure must cut)
            pa.field("target_created_at", TS),
            pa.field("erased_at", TS),
            pa.field("erased_version", pa.int64()),  # the history starts at it
            pa.field("objects", pa.string()),  # JSON: {"rewritten": [...], "removed": [...]}
            *SYSTEM_FIELDS,
        ]
    )


#: derived: `memlake export` leaves it out and import refuses it (a tenant's receipts are its
#: own; an import into another tenant starts without them)
SPEC = TableSpec(TABLE, _schema, ("status",), derived=True)


@dataclass(frozen=True)
class Request:
    id: str
    kind: Kind
    requested_seq: int
    requested_at: datetime
    reason: str
    #: when the target was first written (None: unknown, so all history is cut)
    target_created_at: datetime | None = None


@dataclass(frozen=True)
class Receipt:
    id: str
    kind: str
    requested_at: datetime
    erased_at: datetime
    erased_version: int
    #: the objects of the newest manifest that held it (rewritten without it)
    rewritten: tuple[str, ...]
    #: objects the pass removed (the rewritten ones' old objects and the history's)
    removed: int
    #: the manifest versions the pass cut, [first, erased_version)
    history_from: int = 0
    #: the delete's version: versions of the target up to it were erased
    requested_seq: int = 0


def request(
    txn: Transaction,
    kind: Kind,
    target_id: str,
    created_at: datetime | None,
    reason: str = "delete",
) -> None:
    """Stage the erasure of `target_id` in the transaction that deletes it (it commits at the
    version after its snapshot's, so that is the newest version erased). `created_at`: when
    the target was first written (history older than that holds nothing of it)."""
    txn.put(
        TABLE,
        {
            "id": target_id,
            "kind": kind,
            "status": PENDING,
            "requested_at": now(),
            "requested_seq": txn.snapshot.version + 1,
            "reason": reason,
            "target_created_at": created_at,
        },
    )


def request_episode(txn: Transaction, episode_id: str) -> None:
    """delete_episode's cleanup (memlake.features): the episode's erasure is requested, with
    when it was first written (read from the snapshot: the delete is staged already)."""
    row = txn.snapshot.table(EPISODES).get(episode_id)
    request(txn, "episode", episode_id, row.get("created_at") if row else None)


def _rows(snap: Snapshot, status: str) -> list[dict[str, Any]]:
    if TABLE not in snap.manifest.tables:
        return []
    table = snap.table(TABLE).live_table()
    return table.filter(pc.equal(table.column("status"), status)).to_pylist()


def may_be_pending(snap: Snapshot) -> bool:
    """Whether a segment of the table may hold a pending request, by the manifest's status
    statistics alone (every maintenance tick asks: most find none without reading a row)."""
    for seg in snap.manifest.segments(TABLE):
        values = seg.stats.get("status", {}).get("values")
        if values is None or PENDING in values:
            return True
    return False


def pending(snap: Snapshot) -> list[Request]:
    """Requests no pass has finished."""
    if not may_be_pending(snap):
        return []
    return [
        Request(
            r["id"],
            r["kind"],
            r["requested_seq"],
            r["requested_at"],
            r["reason"] or "delete",
            r.get("target_created_at"),
        )
        for r in _rows(snap, PENDING)
    ]


def receipts(snap: Snapshot) -> list[Receipt]:
    """Every finished erasure of the tenant."""
    out = []
    for r in _rows(snap, ERASED):
        objects = json.loads(r["objects"] or "{}")
        out.append(
            Receipt(
                r["id"],
                r["kind"],
                r["requested_at"],
                r["erased_at"],
                r["erased_version"],
                tuple(objects.get("rewritten", ())),
                int(objects.get("removed", 0)),
                int((objects.get("history_cut") or [0])[0]),
                int(r["requested_seq"] or 0),
            )
        )
    return out


def still_pending(txn: Transaction, req: Request) -> bool:
    """Whether `req` is the request the table holds now (a newer delete of the same id, after
    it was stored again, is a request of its own)."""
    row = txn.get(TABLE, req.id)
    return (
        row is not None and row["status"] == PENDING and row["requested_seq"] == req.requested_seq
    )


def mark_erased(
    txn: Transaction,
    requests: list[Request],
    version: int,
    held_by: dict[str, set[str]],
    removed: int,
    history_from: int = 0,
) -> None:
    """The requests become receipts: erased when the history was cut at `version`; each names
    the objects of the newest manifest that held it (rewritten without it) and how many
    objects the pass removed in all (theirs and the history's)."""
    at = now()
    for req in requests:
        objects = {
            "rewritten": sorted(held_by.get(req.id, ())),
            "removed": removed,
            "history_cut": [history_from, version],  # manifests [from, to) are markers
        }
        txn.put(
            TABLE,
            {
                "id": req.id,
                "kind": req.kind,
                "status": ERASED,
                "requested_at": req.requested_at,
                "requested_seq": req.requested_seq,
                "reason": req.reason,
                "target_created_at": req.target_created_at,
                "erased_at": at,
                "erased_version": version,
                "objects": json.dumps(objects, separators=(",", ":")),
            },
        )
