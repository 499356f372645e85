"""The `vector_backlog` table: episodes whose passages are not all in the vector index yet.

A write embeds at most Settings.embed_sync_passages passages of an episode (docs/decisions/1041);
the deferred pass (memlake.search.backfill) embeds the rest, and the shard holding the episode
takes the new vectors later, in batches (memlake.search.catchup). One row per such episode:

    passages   how many passages its text has (the episode_chunks row's `starts`)
    embedded   how many of them have vectors in its episode_chunks row
    indexed    how many of those its index shard holds (what search finds by meaning)

so `passages - indexed` is what get_episode reports as vectors_pending. The row is written in
the commit that changes any of the three (the write's prepare hook, a pass step, a catch-up) and
deleted once every passage is indexed.

Why a table and not the manifest (where a `pending` map lived before, decision 2503): every
commit rewrites the manifest, so a map of N pending episodes cost every write O(N) bytes and
parse time, unbounded; a table costs a small segment per commit that changes it, compaction
merges them, and a tenant with nothing pending has no segment to read. States written before
keep their map: it is read here too, and the pass moves it into the table (`legacy_pending`).

Derived state, like the index shards: rebuilt from episode_chunks rows by an import, so export
leaves it out and import refuses it (TableSpec.derived).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from memlake.lake.schema import SYSTEM_FIELDS, TableSpec
from memlake.lake.snapshot import Snapshot
from memlake.lake.txn import Transaction
from memlake.search.index.passages import Embedded
from memlake.search.index.state import EXTRA_KEY

BACKLOG_TABLE = "vector_backlog"


def _schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),  # the episode id
            pa.field("content_hash", pa.string()),  # of the text the counts are for
            pa.field("passages", pa.int32()),
            pa.field("embedded", pa.int32()),
            pa.field("indexed", pa.int32()),
            *SYSTEM_FIELDS,
        ]
    )


BACKLOG_SPEC = TableSpec(BACKLOG_TABLE, _schema, derived=True)


@dataclass(frozen=True)
class Backlog:
    id: str
    content_hash: str
    passages: int
    embedded: int
    indexed: int

    @property
    def pending(self) -> int:
        """Passages not found by meaning yet (vectors_pending)."""
        return max(0, self.passages - self.indexed)

    @property
    def unembedded(self) -> int:
        return max(0, self.passages - self.embedded)

    @property
    def unindexed(self) -> int:
        """Passages embedded whose vectors the index does not hold yet."""
        return max(0, self.embedded - self.indexed)

    @classmethod
    def of(cls, episode_id: str, emb: Embedded, indexed: int | None = None) -> Backlog:
        """The entry of an episode whose chunks row is `emb` and whose index doc holds
        `indexed` of its vectors (all of them by default: the doc was built from `emb`)."""
        embedded = len(emb.vectors)
        done = embedded if indexed is None else min(indexed, embedded)
        return cls(episode_id, emb.content_hash, len(emb.starts), embedded, done)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Backlog:
        return cls(
            str(row["id"]),
            str(row.get("content_hash") or ""),
            int(row.get("passages") or 0),
            int(row.get("embedded") or 0),
            int(row.get("indexed") or 0),
        )

    def row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content_hash": self.content_hash,
            "passages": self.passages,
            "embedded": self.embedded,
            "indexed": self.indexed,
        }

    def indexed_up_to(self, count: int) -> Backlog:
        return replace(self, indexed=max(self.indexed, min(count, self.embedded)))


def current(txn: Transaction, episode_id: str) -> Backlog | None:
    """The episode's entry as this transaction sees it (staged first), without building the
    table's id index when nothing is staged: only the segments whose id range may hold it."""
    if not txn.snapshot.table(BACKLOG_TABLE).segments and not _staged(txn, episode_id):
        return None
    row = txn.find(BACKLOG_TABLE, episode_id)
    return None if row is None else Backlog.from_row(row)


def _staged(txn: Transaction, episode_id: str) -> bool:
    return any(rid == episode_id for rid, _ in txn.staged_rows(BACKLOG_TABLE))


def staged_entries(txn: Transaction) -> dict[str, Backlog | None]:
    """The entries staged in this transaction (None: a delete)."""
    return {
        rid: None if row is None else Backlog.from_row(row)
        for rid, row in txn.staged_rows(BACKLOG_TABLE)
    }


def record(txn: Transaction, episode_id: str, entry: Backlog | None) -> None:
    """Stage the episode's entry: kept while some passage is not indexed, deleted otherwise
    (a delete is staged only for an entry that exists: most writes never had one)."""
    if entry is not None and entry.pending > 0:
        txn.put(BACKLOG_TABLE, entry.row())
    elif current(txn, episode_id) is not None:
        txn.delete(BACKLOG_TABLE, episode_id)


def read_all(snap: Snapshot) -> list[Backlog]:
    """Every entry, oldest episode first (ids are time-ordered); nothing is read when the table
    has no segment."""
    view = snap.table(BACKLOG_TABLE)
    if not view.segments:
        return []
    rows = view.live_table().to_pylist()
    return sorted((Backlog.from_row(r) for r in rows), key=lambda e: e.id)


def legacy_pending(extra: dict[str, Any]) -> dict[str, int]:
    """The manifest's `pending` map of a state written before this table (empty after the
    deferred pass moved it here)."""
    doc = extra.get(EXTRA_KEY) or {}
    return {str(k): int(v) for k, v in (doc.get("pending") or {}).items()}


def vectors_pending(snap: Snapshot, episode_id: str, *, rewritten: bool = False) -> int:
    """Passages of an episode not found by meaning yet (0 when all are); `rewritten`: once a
    new version of the same text commits (its doc is built from every stored vector)."""
    legacy = legacy_pending(snap.extra).get(episode_id)
    if legacy is not None:
        return legacy
    view = snap.table(BACKLOG_TABLE)
    if not view.segments:
        return 0
    found = view.find(episode_id)
    if found is None or not found[0].is_live:
        return 0
    entry = Backlog.from_row(found[1])
    return entry.unembedded if rewritten else entry.pending


def pending_map(snap: Snapshot) -> dict[str, int]:
    """episode id -> vectors_pending, for every episode with some (the legacy map included)."""
    out = {e.id: e.pending for e in read_all(snap) if e.pending > 0}
    out.update(legacy_pending(snap.extra))
    return out
