"""The memory-layer tables, their derived ids, and the episode-delete cleanup.

This is the feature module named in memlake.features: importing it registers the tables
(threads, thread_messages, concepts, concept_links) and the episode-delete cleanup that removes
an episode's concept links and unbinds its source thread in delete_episode's transaction.
"""

from __future__ import annotations

import hashlib

import pyarrow as pa

from memlake.lake.schema import SYSTEM_FIELDS, TS, TableSpec
from memlake.lake.txn import Transaction
from memlake.timeutil import now

THREADS = "threads"
MESSAGES = "thread_messages"
CONCEPTS = "concepts"
LINKS = "concept_links"


def _threads(_dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("title", pa.string()),
            pa.field("context", pa.string()),
            pa.field("processing_status", pa.string()),  # pending | processing | completed
            pa.field("claimed_by", pa.string()),  # token id of the claimer
            pa.field("claimed_at", TS),
            pa.field("episode_id", pa.string()),
            pa.field("message_count", pa.int64()),
            pa.field("created_at", TS),
            pa.field("updated_at", TS),
            pa.field("status_changed_at", TS),
            *SYSTEM_FIELDS,
        ]
    )


def _messages(_dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),  # message_id(thread_id, seq)
            pa.field("thread_id", pa.string()),
            pa.field("seq", pa.int64()),
            pa.field("role", pa.string()),
            pa.field("content", pa.string()),
            pa.field("at", TS),
            *SYSTEM_FIELDS,
        ]
    )


def _concepts(_dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("name", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("description", pa.string()),
            pa.field("parent_id", pa.string()),
            pa.field("created_at", TS),
            pa.field("updated_at", TS),
            *SYSTEM_FIELDS,
        ]
    )


def _links(_dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),  # link_id(concept_id, episode_id)
            pa.field("concept_id", pa.string()),
            pa.field("episode_id", pa.string()),
            pa.field("position", pa.int64()),
            pa.field("confidence", pa.float64()),
            pa.field("created_at", TS),
            *SYSTEM_FIELDS,
        ]
    )


#: the memory layers' tables (memlake.features lists them)
SPECS = (
    TableSpec(THREADS, _threads, ("created_at",)),
    TableSpec(MESSAGES, _messages),
    TableSpec(CONCEPTS, _concepts),
    TableSpec(LINKS, _links),
)


def link_id(concept_id: str, episode_id: str) -> str:
    """A link's id is derived from its pair (160 bits of SHA-256), so linking twice finds the
    same row; like every row id it matches ids.ID_PATTERN (export/import checks that)."""
    return hashlib.sha256(f"{concept_id}\n{episode_id}".encode()).hexdigest()[:40]


def message_id(thread_id: str, seq: int) -> str:
    """Thread ids are generated (26 characters), so this stays within ids.ID_PATTERN."""
    return f"{thread_id}-{seq:06d}"


def commit_version(txn: Transaction) -> int:
    """The manifest version this attempt commits as: the engine writes snapshot.version + 1 and
    re-runs change functions on a lost race, so the value is right for the attempt that lands."""
    return txn.snapshot.version + 1


# episode-delete cleanup --------------------------------------------------------------------
def on_episode_deleted(txn: Transaction, episode_id: str) -> None:
    """Remove the episode's concept links and unbind its source thread, in the same commit."""
    for link in txn.where(LINKS, "episode_id", [episode_id]):
        txn.delete(LINKS, link["id"])
    for thread in txn.where(THREADS, "episode_id", [episode_id]):
        txn.put(THREADS, {**thread, "episode_id": None, "updated_at": now()})
