"""upsert_episode's write and the revision history of an episode (docs/decisions/0503).

Episodes of ADR-007 share the episodes table with add_episode: events go to `content`,
source_title to `title`, so search indexes them like any episode. Each upsert of an existing
episode writes a new row version with revision + 1 and `previous_version`, the manifest version
that wrote the revision it replaces. The history walks that chain through the retained manifests
(point-in-time reads): one manifest and the one segment written at that version per step.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memlake.episodes import TABLE, not_found, to_columns
from memlake.errors import Conflict, CorruptObject, InvalidArgument, NotFound
from memlake.lake import Lake
from memlake.lake.txn import Transaction
from memlake.layers import links, threads
from memlake.timeutil import iso

#: upsert_episode's arguments that are episode columns (episodes.to_columns names them)
COLUMNS = (
    "events",
    "source_title",
    "summary",
    "context",
    "tags",
    "started_at",
    "ended_at",
    "timezone",
    "platform",
    "client",
    "model",
    "voice_mode",
    "input_modalities",
    "output_modalities",
    "qualities",
)


def _columns(given: dict[str, Any]) -> dict[str, Any]:
    return to_columns({key: given[key] for key in COLUMNS if key in given})


def upsert(
    txn: Transaction,
    episode_id: str,
    given: dict[str, Any],
    *,
    at: datetime,
    default_context: str | None,
) -> tuple[dict[str, Any], bool, int]:
    """Create or update episode_id; keys of `given` replace, omitted ones keep their value.

    `given` may also hold source_thread_id and concept_ids. Returns (row, created, version):
    an update that changes no field writes no new revision (version is the current one's).
    """
    existing = txn.get(TABLE, episode_id)
    if existing is None and not given.get("events"):
        raise InvalidArgument(
            f"events is required to create episode {episode_id}",
            hint="Pass events (the markdown narration); on later upserts it may be omitted.",
        )
    row: dict[str, Any] = dict(existing) if existing else {"id": episode_id, "entity_ids": []}
    if "events" in given and not given["events"]:
        raise InvalidArgument("events cannot be empty", hint="Pass the narration.")
    row.update(_columns(given))
    start, end = row.get("started_at"), row.get("ended_at")
    if start is not None and end is not None and start > end:
        raise InvalidArgument(
            f"started_at {iso(start)} is after ended_at {iso(end)}",
            hint="Pass both times, with started_at at or before ended_at.",
        )
    _bind_thread(txn, episode_id, existing, given, row)
    if "concept_ids" in given:
        links.set_episode_concepts(txn, episode_id, given["concept_ids"] or [])
    version = txn.snapshot.version + 1  # the engine commits this attempt as snapshot + 1
    staged = dict(txn.staged_rows(TABLE)).get(episode_id)
    committed = txn.snapshot.table(TABLE).locate(episode_id) if staged is None else None
    if existing is None:
        row.update(created_at=at, revision=1, previous_version=None)
        row.setdefault("context", default_context)
    elif row == existing:  # nothing changed: no new revision
        return row, False, committed.seq if committed is not None else version
    elif committed is not None:  # replacing a committed revision (not one staged in this batch)
        row.update(revision=(existing.get("revision") or 1) + 1, previous_version=committed.seq)
    row["updated_at"] = at
    txn.put(TABLE, row)
    return row, existing is None, version


def preview(existing: dict[str, Any] | None, given: dict[str, Any]) -> dict[str, Any]:
    """The row an upsert will most likely write (for embedding ahead of the commit lock)."""
    row = dict(existing or {})
    row.update(_columns(given))
    return row


def _bind_thread(
    txn: Transaction,
    episode_id: str,
    existing: dict[str, Any] | None,
    given: dict[str, Any],
    row: dict[str, Any],
) -> None:
    if "source_thread_id" not in given:
        return
    wanted = given["source_thread_id"]
    bound = existing.get("source_thread_id") if existing else None
    if bound is not None and wanted != bound:
        raise Conflict(
            f"episode {episode_id} is derived from thread {bound}; its source_thread_id is fixed",
            hint="Omit source_thread_id, or create a new episode for the other thread.",
        )
    if wanted is not None:
        threads.bind_episode(txn, wanted, episode_id)
    row["source_thread_id"] = wanted


def history(
    lake: Lake, tenant: str, episode_id: str, *, limit: int, from_version: int | None
) -> tuple[list[tuple[int, dict[str, Any]]], int | None, bool]:
    """Revisions newest first as (version, row). Returns (revisions, next_version, collected):
    next_version continues the walk; collected means older revisions are not readable here
    (their manifests were garbage-collected, or the episode was imported from another lake)."""
    if from_version is None:
        snap = lake.snapshot(tenant)
        loc = snap.table(TABLE).locate(episode_id)
        row = snap.table(TABLE).get(episode_id)
        if loc is None or row is None:
            raise not_found(episode_id)
        version: int | None = loc.seq
    else:
        version, row = from_version, _at_version(lake, tenant, episode_id, from_version)
        if row is None:
            raise InvalidArgument(
                f"no revision of episode {episode_id} was written at version {from_version}",
                hint="Pass next_version exactly as get_episode_history returned it.",
            )
    out: list[tuple[int, dict[str, Any]]] = []
    while row is not None and version is not None and len(out) < limit:
        out.append((version, row))
        previous = row.get("previous_version")
        if previous is not None and previous >= version:  # versions of another lake (import)
            return out, None, True
        version, row = previous, None
        if version is not None and len(out) < limit:
            try:
                row = _at_version(lake, tenant, episode_id, version)
            except NotFound:  # collected, or cut by an erasure (decision 4801)
                return out, None, True
            except CorruptObject as e:
                if not e.missing:
                    raise
                return out, None, True  # its segment went with an erasure's cut
            if row is None:
                return out, None, True
    return out, version, False


def _at_version(lake: Lake, tenant: str, episode_id: str, version: int) -> dict[str, Any] | None:
    snap = lake.snapshot(tenant, version=version)
    return snap.table(TABLE).written_at(snap.version, episode_id)
