"""The relationships of one snapshot as an in-memory index, cached per snapshot version.

RelIndex holds every live edge by id, per-episode adjacency (outgoing and incoming tuples)
and the (from, to, type) key of each edge. It is immutable once built, so concurrent readers
share it without locks. Building it:

* first time for a tenant (or after compaction rewrote the first segments): from the table's
  live rows (snapshot.table("relationships").live_table(), columns converted with pyarrow);
* when a newer snapshot of the same lake appended segments to the one indexed last (or a
  compaction merged some of its later segments): from the previous index plus the rows of
  the segments after the shared prefix (latest version wins, tombstones remove), copying only
  the top-level dicts and the adjacency tuples of touched episodes. Segments are immutable
  and their keys unique, so a shared key prefix means the same rows.

EdgeView layers a transaction's staged rows over an index, so validation inside a commit
function sees exactly what that commit would produce.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from memlake.graph import ACYCLIC_TYPES, shortest_path
from memlake.lake.snapshot import Snapshot, TableView
from memlake.lake.txn import Transaction
from memlake.relationships.table import TABLE, Rel, rel_from_row

MAX_RECENT_TENANTS = 16
Adjacency = dict[str, tuple[Rel, ...]]


class RelIndex:
    __slots__ = ("version", "segment_keys", "rows", "out", "inc", "keys", "memo")

    def __init__(
        self,
        version: int,
        segment_keys: tuple[str, ...],
        rows: dict[str, Rel],
        out: Adjacency,
        inc: Adjacency,
        keys: dict[tuple[str, str, str], str],
    ) -> None:
        self.version = version
        self.segment_keys = segment_keys
        self.rows = rows
        self.out = out
        self.inc = inc
        self.keys = keys
        self.memo: dict[Any, Any] = {}  # derived views (e.g. degree rankings) of this version

    def derive(
        self, version: int, segment_keys: tuple[str, ...], changes: dict[str, Rel | None]
    ) -> RelIndex:
        """A new index: this one with changes applied (id -> new row, or None to remove)."""
        gone = [self.rows[rid] for rid in changes if rid in self.rows]
        added = [rel for rel in changes.values() if rel is not None]
        rows = dict(self.rows)
        keys = dict(self.keys)
        for rel in gone:
            del rows[rel.id]
            if keys.get(rel.key) == rel.id:
                del keys[rel.key]
        for rel in added:
            rows[rel.id] = rel
            keys[rel.key] = rel.id
        out = _patch(self.out, gone, added, changes, _from)
        inc = _patch(self.inc, gone, added, changes, _to)
        return RelIndex(version, segment_keys, rows, out, inc, keys)


EMPTY = RelIndex(0, (), {}, {}, {}, {})


def _from(rel: Rel) -> str:
    return rel.from_id


def _to(rel: Rel) -> str:
    return rel.to_id


def _patch(
    adjacency: Adjacency,
    gone: list[Rel],
    added: list[Rel],
    changes: dict[str, Rel | None],
    end: Callable[[Rel], str],
) -> Adjacency:
    if not gone and not added:
        return adjacency
    new_by_node: dict[str, list[Rel]] = defaultdict(list)
    for rel in added:
        new_by_node[end(rel)].append(rel)
    shrunk = {end(rel) for rel in gone}
    patched = dict(adjacency)
    for node in shrunk | new_by_node.keys():
        kept = list(patched.get(node, ()))
        if node in shrunk:
            kept = [rel for rel in kept if rel.id not in changes]
        kept.extend(new_by_node.get(node, ()))
        if kept:
            patched[node] = tuple(kept)
        else:
            patched.pop(node, None)
    return patched


def _rels(table: pa.Table) -> Iterator[tuple[str, Rel | None]]:
    """(id, Rel or None for a tombstone) for every row of a relationships table."""
    names = ("id", "from_id", "to_id", "type", "strength", "metadata")
    ids, froms, tos, types, strengths, metadata = (table.column(n).to_pylist() for n in names)
    created = pc.cast(table.column("created_at"), pa.int64()).to_pylist()
    deleted = (
        table.column("_deleted").to_pylist()
        if "_deleted" in table.column_names
        else [False] * table.num_rows
    )
    for i, rid in enumerate(ids):
        if deleted[i]:
            yield rid, None
        else:
            yield rid, Rel(rid, froms[i], tos[i], types[i], strengths[i], created[i], metadata[i])


def _shared_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _build(version: int, view: TableView, base: RelIndex | None) -> RelIndex:
    keys = tuple(seg.key for seg in view.segments)
    # Segment keys are unique, so a shared first segment means the same lake; a newer
    # version of it differs from base only by appended segments and compactions.
    if base is not None and version >= base.version:
        shared = _shared_prefix(keys, base.segment_keys)
        if shared:
            changes: dict[str, Rel | None] = {}
            for pos in range(shared, len(keys)):  # newer segments, oldest first
                changes.update(_rels(view.segment_table(pos)))
            index = base.derive(version, keys, changes)
            if shared == len(base.segment_keys):
                return index  # only appends: exact by construction
            # A compaction replaced part of the tail. A merged run that does not start at the
            # first segment keeps the newest row (or tombstone) of each of its ids, so
            # re-applying the new tail is exact; check the ids anyway (one pass over the
            # view's id index) and rebuild if compaction ever drops more.
            if index.rows.keys() == set(view.ids()):
                return index
    return EMPTY.derive(version, keys, dict(_rels(view.live_table())))


def _is_older(index: RelIndex, than: RelIndex) -> bool:
    """Whether index is an earlier state of the same lake than `than` (a point-in-time
    read). Versions alone cannot tell: two lakes (stores) may serve a tenant of the same
    name in one process."""
    same_lake = _shared_prefix(index.segment_keys, than.segment_keys) > 0
    return same_lake and index.version < than.version


_lock = threading.Lock()
_by_view: weakref.WeakKeyDictionary[TableView, RelIndex] = weakref.WeakKeyDictionary()
_recent: OrderedDict[str, RelIndex] = OrderedDict()  # tenant -> newest index built


def relationship_index(snap: Snapshot) -> RelIndex:
    """The index of snap's relationships; built once per snapshot and shared."""
    view = snap.table(TABLE)
    index = _by_view.get(view)
    if index is not None:
        return index
    with _lock:
        index = _by_view.get(view)
        if index is None:
            index = _build(snap.version, view, _recent.get(snap.tenant))
            _by_view[view] = index
            newest = _recent.get(snap.tenant)
            if newest is None or not _is_older(index, newest):
                _recent[snap.tenant] = index  # the next version derives from this one
            _recent.move_to_end(snap.tenant)
            while len(_recent) > MAX_RECENT_TENANTS:
                _recent.popitem(last=False)
    return index


class EdgeView:
    """The edges a reader or a transaction sees: an index plus staged changes on top."""

    def __init__(self, index: RelIndex, staged: dict[str, Rel | None] | None = None) -> None:
        self.index = index
        self.staged = staged or {}
        self._new_out: dict[str, list[Rel]] = defaultdict(list)
        self._new_in: dict[str, list[Rel]] = defaultdict(list)
        for rel in self.staged.values():
            if rel is not None:
                self._new_out[rel.from_id].append(rel)
                self._new_in[rel.to_id].append(rel)

    @classmethod
    def of_snapshot(cls, snap: Snapshot) -> EdgeView:
        return cls(relationship_index(snap))

    @classmethod
    def of_txn(cls, txn: Transaction) -> EdgeView:
        staged = {
            rid: (None if row is None else rel_from_row(row)) for rid, row in txn.staged_rows(TABLE)
        }
        return cls(relationship_index(txn.snapshot), staged)

    def _merge(self, indexed: Iterable[Rel], new: list[Rel] | None) -> Iterator[Rel]:
        if self.staged:
            yield from (rel for rel in indexed if rel.id not in self.staged)
        else:
            yield from indexed
        if new:
            yield from new

    def outgoing(self, episode_id: str) -> Iterator[Rel]:
        return self._merge(self.index.out.get(episode_id, ()), self._new_out.get(episode_id))

    def incoming(self, episode_id: str) -> Iterator[Rel]:
        return self._merge(self.index.inc.get(episode_id, ()), self._new_in.get(episode_id))

    def touching(self, episode_id: str) -> list[Rel]:
        return [*self.outgoing(episode_id), *self.incoming(episode_id)]

    def find(self, from_id: str, to_id: str, type_: str) -> Rel | None:
        """The live edge with this (from, to, type), if any."""
        for rel in self._new_out.get(from_id, ()):
            if rel.to_id == to_id and rel.type == type_:
                return rel
        rel_id = self.index.keys.get((from_id, to_id, type_))
        if rel_id is None or rel_id in self.staged:
            return None
        return self.index.rows[rel_id]

    def cycle_if_added(self, from_id: str, to_id: str) -> list[str] | None:
        """The cycle [from, to, ..., from] that an ordering edge from -> to would close.

        follows and causes both mean "from comes before to", so they form one order and a
        cycle may mix them (docs/decisions/0602).
        """
        if from_id == to_id:
            return [from_id, from_id]

        def successors(node: str) -> Iterator[str]:
            return (rel.to_id for rel in self.outgoing(node) if rel.type in ACYCLIC_TYPES)

        way_back = shortest_path(successors, to_id, from_id)
        return None if way_back is None else [from_id, *way_back]
