"""A read view of one tenant at one manifest version: every read of stored rows goes here.

"Latest version of a row wins": of all versions of an id in the segments the manifest lists,
the one with the highest (commit seq, segment position, row) is the row, and it is gone when
that version is a tombstone. A TableView resolves this in two ways (docs/decisions/1145):

- the id index (`index`, `locate`, `get`, `rows`, `ids`, `count`, `live_table`): a dict from
  id to where its newest version is (`locate` gives it as a RowLocation), built once per
  snapshot. A newer snapshot whose segment list only appends to an older one's reuses the
  older index and reads just the new segments: the lake keeps, per tenant and table, the
  newest view whose index was built (the "memo"), so a table untouched by the last commits is
  not re-indexed when a snapshot is next asked for it.
- without the index (`scan`, `where`, `find`): vectorised passes over the segments for the few
  rows a lookup wants, for large tables that a write makes a new snapshot of (see `scan`).

Rows leave a view without the system columns (`_deleted`, `_seq`): memlake.lake.scans.visible
is the one place that strips them. Transaction (memlake.lake.txn) layers its staged rows over
these reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from contextlib import suppress
from typing import Any, TypeVar

import pyarrow as pa

from memlake.errors import CorruptObject, MemlakeError
from memlake.lake.manifest import Manifest, SegmentRef
from memlake.lake.rows import row_at
from memlake.lake.scans import SYSTEM_COLUMNS, RowLocation, Scans, visible
from memlake.lake.segments import SegmentCache
from memlake.pools import STORE_IO, LazyPool
from memlake.store.base import ObjectStore

T = TypeVar("T")

#: the id index: id -> (seq, segment, row, deleted), plain tuples (RowLocation's fields) because
#: a NamedTuple per row makes building the index of a large table twice as slow
IdIndex = dict[str, tuple[int, int, int, bool]]
#: background builds of the id index (fetch and Parquet decoding release the GIL)
_READERS = LazyPool(4, "memlake-segments")
#: segments read at once by `lookup` (a search's hits in one round trip): the store's I/O pool
_LOOKUPS = STORE_IO
INDEX_AFTER_LOOKUP = True


class TableView(Scans):
    """One table of a snapshot: reads through the id index here, without it in Scans."""

    def __init__(
        self,
        name: str,
        segments: tuple[SegmentRef, ...],
        store: ObjectStore,
        cache: SegmentCache,
        schema_of: Callable[[str], pa.Schema],
        previous: TableView | None = None,
        version: int = 0,
        memo: dict[str, TableView] | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self._memo = memo
        self.segments = segments
        self.schema = schema_of(name)
        self._store = store
        self._cache = cache
        self._previous = previous
        self._index: IdIndex | None = None
        self._live: pa.Table | None = None
        self._lock = threading.Lock()
        self._indexing: Future[IdIndex] | None = None  # lookup's background build
        self.unreadable: dict[int, CorruptObject] = {}  # see Scans.unreadable

    def segment_table(self, pos: int) -> pa.Table:
        ref = self.segments[pos]
        return self._cache.read(self._store, ref.key, self.schema, ref.sha256)

    def _build(self) -> IdIndex:
        start = 0
        best: IdIndex = {}
        prev = self._previous
        if prev is not None and prev._index is not None:
            old = prev.segments
            if len(old) <= len(self.segments) and self.segments[: len(old)] == old:
                best = dict(prev._index)
                self.unreadable.update(prev.unreadable)
                start = len(old)
        if len(self.segments) - start > 1:  # read side by side, then indexed in order
            list(_LOOKUPS.get().map(self._prefetch, range(start, len(self.segments))))
        for pos in range(start, len(self.segments)):
            seg = self.segments[pos]
            try:
                table = self.segment_table(pos)
            except CorruptObject as e:  # contained: see `locate`
                self.unreadable[pos] = e
                continue
            ids = table.column("id").to_pylist()
            deleted = table.column("_deleted").to_pylist()
            seqs = table.column("_seq").to_pylist()
            for row, (rid, dead, rseq) in enumerate(zip(ids, deleted, seqs, strict=True)):
                seq = seg.seq if rseq is None else rseq
                cur = best.get(rid)
                if cur is None or (seq, pos, row) >= cur[:3]:
                    best[rid] = (seq, pos, row, bool(dead))
        self._previous = None
        return best

    @property
    def index(self) -> IdIndex:
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._build()
                    memo = self._memo
                    if memo is not None:
                        newest = memo.get(self.name)
                        if newest is None or newest.version < self.version:
                            memo[self.name] = self
        return self._index

    # reads through the id index ----------------------------------------------------------
    def locate(self, row_id: str) -> RowLocation | None:
        """Where the newest version of row_id is (a tombstone too), or None if it never was.
        An id no segment's id range holds (a new one) is None without the id index: a cold
        writer's first commit would read every segment to build it (decision 4401)."""
        if not self._index_at_hand() and not self.may_hold(row_id):
            return None
        loc = self.index.get(row_id)
        if self.unreadable:
            self.raise_if_unreadable_may_hold(row_id, None if loc is None else loc[:2])
        return None if loc is None else RowLocation(*loc)

    def whole(self) -> None:
        """Raise the CorruptObject of an unreadable segment: for reads of the whole table."""
        _ = self.index
        for error in self.unreadable.values():
            raise error

    def get(self, row_id: str) -> dict[str, Any] | None:
        loc = self.locate(row_id)
        if loc is None or loc.deleted:
            return None
        return row_at(self.segment_table(loc.segment), loc.row, SYSTEM_COLUMNS)

    def _prefetch(self, pos: int) -> None:
        with suppress(CorruptObject):
            self.segment_table(pos)

    def read_ahead(self, ids: Iterable[str]) -> None:
        """Start reading, in the background, the segment that `lookup` reads first for each
        id (the newest whose id range holds it) when it is not held or being read already: a
        search names its likely hits before it has ranked them, and a cold one then finds
        their rows read (decision 4401). Returns at once; a failed read is read again, and
        its error raised, by the lookup that needs it."""
        index = self._index
        if index is not None:
            wanted = {loc[1] for rid in ids if (loc := index.get(rid)) is not None}
        else:
            segs = self.segments
            wanted = {
                max(held, key=lambda p: (segs[p].seq, p))
                for rid in ids
                if (held := self.may_hold(rid))
            }
        pool = _LOOKUPS.get()
        for pos in sorted(wanted):
            if not self._cache.cached(self.segments[pos].key):
                pool.submit(self._read_quietly, pos)

    def _read_quietly(self, pos: int) -> None:
        with suppress(MemlakeError):
            self.segment_table(pos)

    def _index_at_hand(self) -> bool:
        prev = self._previous
        return self._index is not None or (prev is not None and prev._index is not None)

    def _find_each(
        self, ids: Sequence[str]
    ) -> dict[str, tuple[RowLocation, dict[str, Any]] | None]:
        """find() of each id, the segments that may hold them read at once (in parallel); then
        the id index is built in the background (INDEX_AFTER_LOOKUP)."""
        wanted = sorted({pos for rid in ids for pos in self.may_hold(rid)})
        if len(wanted) > 1:  # warm the cache; `find` raises for a damaged one it needs
            list(_LOOKUPS.get().map(self._prefetch, wanted))
        out = {rid: self.find(rid) for rid in ids}
        with self._lock:  # (a failed build is retried by the next reader of the index)
            if INDEX_AFTER_LOOKUP and self._indexing is None:
                self._indexing = _READERS.get().submit(lambda: self.index)
        return out

    def lookup(self, ids: Sequence[str]) -> dict[str, dict[str, Any] | None]:
        """get() of each id, without paying for the id index when it is not at hand: a cold
        process that wants a few rows (a search's hits) would read every segment to build it.
        So unless the view has its index or can extend a previous view's, the segments whose
        id range may hold one of the ids are read at once (in parallel) and each row is found
        by `find`; the index is then built in the background (INDEX_AFTER_LOOKUP), as a
        search's ranged shards are promoted, so that warm lookups cost a dict lookup."""
        if self._index_at_hand():
            return {rid: self.get(rid) for rid in ids}
        found = self._find_each(ids)
        return {
            rid: got[1] if got is not None and got[0].is_live else None
            for rid, got in found.items()
        }

    def lookup_arrow(self, ids: Sequence[str], columns: list[str]) -> dict[str, pa.Table | None]:
        """As lookup, each live row as a one-row Arrow table of `columns`: a caller that wants
        a list column as numpy reads it without making a Python float of each value."""
        if self._index_at_hand():
            locs = {rid: self.locate(rid) for rid in ids}
        else:
            locs = {rid: got[0] if got else None for rid, got in self._find_each(ids).items()}
        return {
            rid: None
            if loc is None or loc.deleted
            else self.segment_table(loc.segment).select(columns).slice(loc.row, 1)
            for rid, loc in locs.items()
        }

    def wait_index(self) -> None:
        """Block until a background build of the id index started by `lookup` is done."""
        if self._indexing is not None:
            self._indexing.exception()

    def rows(self, ids: Iterable[str], columns: list[str] | None = None) -> list[dict[str, Any]]:
        """Live rows by id in the order asked (missing ids skipped), one Arrow take per segment;
        `columns` limits what is read into Python (e.g. no episode content)."""
        wanted = [loc for loc in map(self.locate, ids) if loc is not None and loc.is_live]
        by_segment: dict[int, list[int]] = {}
        for loc in wanted:
            by_segment.setdefault(loc.segment, []).append(loc.row)
        rows: dict[tuple[int, int], dict[str, Any]] = {}
        for pos, numbers in by_segment.items():
            segment = self.segment_table(pos)
            if columns is not None:
                segment = segment.select(columns)
            taken = segment.take(pa.array(numbers, pa.int64())).to_pylist()
            for number, row in zip(numbers, taken, strict=True):
                rows[(pos, number)] = visible(row)
        return [rows[(loc.segment, loc.row)] for loc in wanted]

    def ids(self) -> list[str]:
        self.whole()
        return [rid for rid, (_seq, _pos, _row, dead) in self.index.items() if not dead]

    def count(self) -> int:
        self.whole()
        return sum(1 for _seq, _pos, _row, dead in self.index.values() if not dead)

    def live_table(self, partial: bool = False) -> pa.Table:
        """All live rows as one Arrow table (system columns dropped), cached per snapshot.
        With a segment unreadable, this raises its CorruptObject; `partial`: the rows of the
        readable segments instead (`unreadable` says which were not; memlake.lake.partial)."""
        if not partial:
            self.whole()
        if self._live is None:
            _ = self.index
            by_segment: dict[int, list[int]] = {}
            for _seq, pos, row, dead in self.index.values():
                if not dead:
                    by_segment.setdefault(pos, []).append(row)
            parts = [
                self.segment_table(pos).take(pa.array(sorted(rows), pa.int64()))
                for pos, rows in sorted(by_segment.items())
            ]
            table = pa.concat_tables(parts) if parts else self.schema.empty_table()
            self._live = table.drop_columns(list(SYSTEM_COLUMNS))
        return self._live


class Snapshot:
    def __init__(
        self,
        manifest: Manifest,
        store: ObjectStore,
        cache: SegmentCache,
        schema_of: Callable[[str], pa.Schema],
        previous: Snapshot | None = None,
        memo: dict[str, TableView] | None = None,
    ) -> None:
        self.manifest = manifest
        self._memo = memo
        self._store = store
        self._cache = cache
        self._schema_of = schema_of
        self._views: dict[str, TableView] = {}
        self._previous = previous
        self._lock = threading.Lock()
        #: set when the newest manifest is damaged and this is the newest intact one: (the
        #: damaged version, why); reads use this snapshot, writes are refused
        self.damage: tuple[int, MemlakeError] | None = None
        self._derived: dict[str, Any] = {}

    @property
    def version(self) -> int:
        return self.manifest.version

    @property
    def damaged_version(self) -> int | None:
        return None if self.damage is None else self.damage[0]

    @property
    def tenant(self) -> str:
        return self.manifest.tenant

    @property
    def extra(self) -> dict[str, Any]:
        return self.manifest.extra

    def derived(self, key: str, make: Callable[[], T]) -> T:
        """What `make` derives from this snapshot, made once per `key` while the snapshot is
        held (its manifest does not change: a search's parsed shard layout, say, which the
        process's searches share until the next commit; ~0.05-0.09 ms a search at 20k). The
        value is shared between threads: its users only read it."""
        if key not in self._derived:
            self._derived.setdefault(key, make())  # (two threads may both make it: the same)
        got: T = self._derived[key]
        return got

    def table(self, name: str) -> TableView:
        with self._lock:
            view = self._views.get(name)
            if view is None:
                prev = self._previous._views.get(name) if self._previous is not None else None
                if (prev is None or prev._index is None) and self._memo is not None:
                    prev = self._memo.get(name)
                view = TableView(
                    name,
                    self.manifest.segments(name),
                    self._store,
                    self._cache,
                    self._schema_of,
                    prev,
                    self.manifest.version,
                    self._memo,
                )
                self._views[name] = view
            return view

    def where(self, table: str, column: str, values: Iterable[str]) -> list[dict[str, Any]]:
        """Live rows of `table` whose `column` is one of `values` (as Transaction.where)."""
        return self.table(table).where(column, values)

    def release_previous(self) -> None:
        self._previous = None
