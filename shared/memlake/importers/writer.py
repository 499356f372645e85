"""Staging one prepared conversation into a transaction: a new thread and episode, the new
messages of one the lake holds (a new revision of its episode), or the whole conversation again
when the export rewrote its history (an edit became the shown branch).

Rows go straight to the layer tables, as add_thread and upsert_episode would write them, with
the thread pending (ADR-007: an agent may still derive concepts from it). The tools' per-call
limits (100 messages, 1 MB an append) bound one MCP call, not an import; the per-message and
per-thread limits still hold (records.prepare).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memlake.episodes import TABLE as EPISODES
from memlake.episodes import to_columns
from memlake.importers import records
from memlake.importers.records import Prepared
from memlake.lake.txn import Transaction
from memlake.layers import episode_versions, threads
from memlake.layers.tables import MESSAGES, THREADS, message_id


@dataclass(frozen=True)
class Known:
    """What the lake holds of an imported conversation (from its episode's metadata)."""

    digest: str
    messages: int


def _messages(txn: Transaction, p: Prepared, at: list[datetime], first: int) -> None:
    tid = records.thread_id(p.key)
    for seq in range(first, len(p.messages)):
        m = p.messages[seq]
        txn.put(
            MESSAGES,
            {
                "id": message_id(tid, seq),
                "thread_id": tid,
                "seq": seq,
                "role": m.role,
                "content": m.text,
                "at": at[seq],
            },
        )


def create(
    txn: Transaction, p: Prepared, fields: dict[str, Any], at: list[datetime], now: datetime
) -> None:
    tid, eid = records.thread_id(p.key), records.episode_id(p.key)
    thread = threads.new_thread_row(fields["source_title"], fields["context"], at[0])
    thread.update(id=tid, episode_id=eid, message_count=len(p.messages), updated_at=at[-1])
    _messages(txn, p, at, 0)
    txn.put(THREADS, thread)
    given = {k: v for k, v in fields.items() if k != "source_thread_id"}
    row = {
        "id": eid,
        **to_columns({k: given[k] for k in episode_versions.COLUMNS if k in given}),
        "metadata": json.dumps(records.metadata(p), ensure_ascii=False),
        "source_thread_id": tid,
        "entity_ids": [],
        "created_at": now,
        "updated_at": now,
        "revision": 1,
        "previous_version": None,
    }
    txn.put(EPISODES, row)


def update(
    txn: Transaction,
    p: Prepared,
    known: Known,
    fields: dict[str, Any],
    at: list[datetime],
    now: datetime,
) -> bool:
    """Bring a conversation the lake holds up to the export. Returns False when the lake no
    longer has its thread or episode (deleted since): the caller creates them again."""
    tid, eid = records.thread_id(p.key), records.episode_id(p.key)
    thread, episode = txn.get(THREADS, tid), txn.get(EPISODES, eid)
    if thread is None or episode is None or episode.get("source_thread_id") != tid:
        return False
    grows = known.messages <= len(p.messages) and p.prefix_digests[known.messages] == known.digest
    first = known.messages if grows else 0
    _messages(txn, p, at, first)
    for seq in range(len(p.messages), thread.get("message_count") or 0):  # a shorter history
        txn.delete(MESSAGES, message_id(tid, seq))
    thread.update(message_count=len(p.messages), updated_at=now, title=fields["source_title"])
    if thread.get("processing_status") == threads.COMPLETED:  # new words to derive from
        thread.update(processing_status=threads.PENDING, claimed_by=None, claimed_at=None)
        thread["status_changed_at"] = now
    txn.put(THREADS, thread)
    given = {k: v for k, v in fields.items() if k not in ("source_thread_id", "context")}
    row, _, _ = episode_versions.upsert(txn, eid, given, at=now, default_context=None)
    old = json.loads(row.get("metadata") or "{}")
    row["metadata"] = json.dumps({**old, **records.metadata(p)}, ensure_ascii=False)
    txn.put(EPISODES, row)
    return True


def known_of(metadata: str | None) -> Known | None:
    """The import record in an episode's metadata, or None when it has none."""
    try:
        info = json.loads(metadata or "{}").get(records.META_KEY)
    except (ValueError, AttributeError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("digest"), str):
        return None
    count = info.get("messages")
    return Known(info["digest"], count) if isinstance(count, int) and count >= 0 else None
