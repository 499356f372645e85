"""Threads: raw conversations, their messages, and the processing status machine of ADR-007.

A thread row is small (status, claim, counters); its messages are rows of thread_messages with
ids f"{thread_id}-{seq:06d}", so an append writes only the new messages and the thread row,
never the whole conversation again. Status moves are validated inside the commit function: on a
lost race the engine re-runs it against the newer state, so of two agents claiming one pending
thread exactly one succeeds and the other gets Conflict("already processing").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from memlake.cursors import Pager
from memlake.errors import Conflict, InvalidArgument, NotFound
from memlake.ids import new_id
from memlake.lake.snapshot import Snapshot
from memlake.lake.txn import Transaction
from memlake.layers.fields import MAX_THREAD_MESSAGES, MessageIn
from memlake.layers.tables import (
    MESSAGES,
    THREADS,
    message_id,
)
from memlake.timeutil import iso, now, parse_time

PENDING, PROCESSING, COMPLETED = "pending", "processing", "completed"
#: (from, to) -> name of the move; everything else is refused
MOVES = {
    (PENDING, PROCESSING): "claim",
    (PROCESSING, COMPLETED): "complete",
    (PROCESSING, PENDING): "release",
    (COMPLETED, PENDING): "reprocess",
}
ALL_MOVES = ", ".join(f"{a}->{b} ({name})" for (a, b), name in MOVES.items())
MAX_APPEND_BYTES = 1024 * 1024


def not_found(thread_id: str) -> NotFound:
    return NotFound(
        f"thread {thread_id} not found",
        hint="Check the id, or use get_pending_threads to find threads.",
    )


def view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "title": row.get("title"),
        "context": row.get("context"),
        "processing_status": row.get("processing_status") or PENDING,
        "claimed_by": row.get("claimed_by"),
        "claimed_at": iso(row.get("claimed_at")),
        "episode_id": row.get("episode_id"),
        "message_count": row.get("message_count") or 0,
        "created_at": iso(row.get("created_at")),
        "updated_at": iso(row.get("updated_at")),
        "status_changed_at": iso(row.get("status_changed_at")),
    }


def message_view(row: dict[str, Any]) -> dict[str, Any]:
    return {"seq": row["seq"], "role": row["role"], "content": row["content"], "at": iso(row["at"])}


def _check_size(messages: list[MessageIn]) -> None:
    total = sum(len(m.content.encode()) for m in messages)
    if total > MAX_APPEND_BYTES:
        raise InvalidArgument(
            f"the messages total {total:,} bytes; one call takes at most {MAX_APPEND_BYTES:,}",
            hint="Send them in several append_thread_messages calls.",
        )


def _stage_messages(
    txn: Transaction, thread: dict[str, Any], messages: list[MessageIn], at: datetime
) -> int:
    first = thread.get("message_count") or 0
    if first + len(messages) > MAX_THREAD_MESSAGES:
        raise InvalidArgument(
            f"thread {thread['id']} has {first:,} messages; {len(messages)} more would pass the"
            f" limit of {MAX_THREAD_MESSAGES:,}",
            hint="Start a new thread for the rest of the conversation.",
        )
    for offset, msg in enumerate(messages):
        seq = first + offset
        txn.put(
            MESSAGES,
            {
                "id": message_id(thread["id"], seq),
                "thread_id": thread["id"],
                "seq": seq,
                "role": msg.role,
                "content": msg.content,
                "at": parse_time(msg.at, field="at") if msg.at else at,
            },
        )
    thread["message_count"] = first + len(messages)
    return first


def new_thread_row(title: str | None, context: str | None, at: datetime) -> dict[str, Any]:
    return {
        "id": new_id(),
        "title": title,
        "context": context,
        "processing_status": PENDING,
        "claimed_by": None,
        "claimed_at": None,
        "episode_id": None,
        "message_count": 0,
        "created_at": at,
        "updated_at": at,
        "status_changed_at": at,
    }


def create(txn: Transaction, row: dict[str, Any], messages: list[MessageIn]) -> dict[str, Any]:
    _check_size(messages)
    thread = dict(row)
    _stage_messages(txn, thread, messages, row["created_at"])
    txn.put(THREADS, thread)
    return thread


def append(
    txn: Transaction, thread_id: str, messages: list[MessageIn]
) -> tuple[dict[str, Any], int, bool]:
    """Append messages; a completed thread is reopened (completed -> pending) for reprocessing.

    Returns (thread row, seq of the first new message, reopened)."""
    _check_size(messages)
    thread = txn.get(THREADS, thread_id)
    if thread is None:
        raise not_found(thread_id)
    at = now()
    first = _stage_messages(txn, thread, messages, at)
    reopened = thread.get("processing_status") == COMPLETED
    if reopened:
        thread.update(processing_status=PENDING, claimed_by=None, claimed_at=None)
        thread["status_changed_at"] = at
    thread["updated_at"] = at
    txn.put(THREADS, thread)
    return thread, first, reopened


def move(
    txn: Transaction, thread_id: str, target: str, token_id: str
) -> tuple[dict[str, Any], str]:
    """Move a thread's processing status; returns (new row, previous status)."""
    thread = txn.get(THREADS, thread_id)
    if thread is None:
        raise not_found(thread_id)
    current = thread.get("processing_status") or PENDING
    if (current, target) not in MOVES:
        if current == target == PROCESSING:
            raise Conflict(
                f"thread {thread_id} is already processing (claimed by {thread.get('claimed_by')}"
                f" at {iso(thread.get('claimed_at'))})",
                hint="Another agent holds it; claim another thread from get_pending_threads.",
            )
        allowed = [b for (a, b) in MOVES if a == current]
        raise Conflict(
            f"cannot move thread {thread_id} from {current} to {target}",
            hint=f"From {current} it may move to: {', '.join(allowed)}. All moves: {ALL_MOVES}.",
        )
    at = now()
    thread.update(processing_status=target, updated_at=at, status_changed_at=at)
    if target == PROCESSING:
        thread.update(claimed_by=token_id, claimed_at=at)
    elif target == PENDING:
        thread.update(claimed_by=None, claimed_at=None)
    txn.put(THREADS, thread)
    return thread, current


def bind_episode(txn: Transaction, thread_id: str, episode_id: str) -> None:
    """Make episode_id the thread's episode (1:1); refuses a thread bound to another episode."""
    thread = txn.get(THREADS, thread_id)
    if thread is None:
        raise not_found(thread_id)
    bound = thread.get("episode_id")
    if bound == episode_id:
        return
    if bound is not None:
        raise Conflict(
            f"thread {thread_id} already has episode {bound}; a thread yields one episode",
            hint=f"Update episode {bound} with upsert_episode(id={bound!r}) instead,"
            " or delete it first.",
        )
    thread.update(episode_id=episode_id, updated_at=now())
    txn.put(THREADS, thread)


def pending_page(
    snap: Snapshot, *, context: str | None, limit: int, cursor: str | None, pager: Pager
) -> tuple[list[dict[str, Any]], str | None]:
    """Pending threads, oldest first (created_at, id), with a keyset cursor."""
    table = snap.table(THREADS).live_table(partial=True)  # get_pending_threads notes the rest
    mask = pc.equal(table.column("processing_status"), PENDING)
    if context is not None:
        mask = pc.and_(mask, pc.equal(table.column("context"), context))
    table = table.filter(mask)
    created = pc.cast(table.column("created_at"), pa.int64())
    table = table.append_column("__at", created)
    if cursor:
        at_us, last_id = pager.decode(cursor)
        after = pc.or_(
            pc.greater(table.column("__at"), at_us),
            pc.and_(pc.equal(table.column("__at"), at_us), pc.greater(table.column("id"), last_id)),
        )
        table = table.filter(after)
    rows = table.sort_by([("__at", "ascending"), ("id", "ascending")]).slice(0, limit + 1)
    page = rows.to_pylist()
    more = len(page) > limit
    page = page[:limit]
    next_cursor = pager.encode([page[-1]["__at"], page[-1]["id"]]) if more else None
    return page, next_cursor


def read_messages(
    snap: Snapshot, thread: dict[str, Any], offset: int, limit: int
) -> list[dict[str, Any]]:
    """Messages offset..offset+limit-1 in order (a scan: no index over every message)."""
    if limit == 0 or offset >= (thread.get("message_count") or 0):
        return []

    def in_page(table: pa.Table) -> pa.ChunkedArray:
        seq = table.column("seq")
        return pc.and_(pc.greater_equal(seq, offset), pc.less(seq, offset + limit))

    rows = snap.table(MESSAGES).scan("thread_id", [thread["id"]], in_page)
    return sorted(rows.values(), key=lambda r: r["seq"])
