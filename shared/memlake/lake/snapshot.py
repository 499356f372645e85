"""A read view of one tenant at one manifest version.

Each table view resolves "latest version of a row wins" once per snapshot: an index from id to
(seq, segment, row) over every segment the manifest lists. A newer snapshot whose segment list
only appends to an older one's reuses the older index and reads just the new segments: the
lake keeps, per tenant and table, the newest view whose index was built (the "memo"), so a
table untouched by the last commits is not re-indexed when a snapshot is next asked for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from memlake.lake.manifest import Manifest, SegmentRef
from memlake.lake.segments import SegmentCache
from memlake.store.base import ObjectStore

_Loc = tuple[int, int, int, bool]  # (seq, segment position, row, deleted)
SYSTEM_COLUMNS = ("_deleted", "_seq")


class TableView:
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
        self._index: dict[str, _Loc] | None = None
        self._live: pa.Table | None = None
        self._lock = threading.Lock()

    def segment_table(self, pos: int) -> pa.Table:
        return self._cache.read(self._store, self.segments[pos].key, self.schema)

    def _build(self) -> dict[str, _Loc]:
        start = 0
        best: dict[str, _Loc] = {}
        prev = self._previous
        if prev is not None and prev._index is not None:
            old = prev.segments
            if len(old) <= len(self.segments) and self.segments[: len(old)] == old:
                best = dict(prev._index)
                start = len(old)
        for pos in range(start, len(self.segments)):
            seg = self.segments[pos]
            table = self.segment_table(pos)
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
    def index(self) -> dict[str, _Loc]:
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

    def get(self, row_id: str) -> dict[str, Any] | None:
        loc = self.index.get(row_id)
        if loc is None or loc[3]:
            return None
        table = self.segment_table(loc[1])
        row = table.slice(loc[2], 1).to_pylist()[0]
        for col in SYSTEM_COLUMNS:
            row.pop(col, None)
        return row

    def ids(self) -> list[str]:
        return [rid for rid, loc in self.index.items() if not loc[3]]

    def count(self) -> int:
        return sum(1 for loc in self.index.values() if not loc[3])

    def live_table(self) -> pa.Table:
        """All live rows as one Arrow table (system columns dropped), cached per snapshot."""
        if self._live is None:
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

    @property
    def version(self) -> int:
        return self.manifest.version

    @property
    def tenant(self) -> str:
        return self.manifest.tenant

    @property
    def extra(self) -> dict[str, Any]:
        return self.manifest.extra

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

    def release_previous(self) -> None:
        self._previous = None
