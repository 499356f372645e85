"""TableView's reads without the id index, and the row vocabulary the index shares with them.

A lookup that wants few rows of a large table (an episode's links, a thread's messages, one
link by id) must not pay for the id index: a write makes a new snapshot, and the index (a
Python dict over every row) would be rebuilt for it. These reads resolve "latest version wins"
for just the rows they touch, with the same order as the index: (commit seq, segment, row).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from memlake.errors import CorruptObject
from memlake.lake.manifest import SegmentRef
from memlake.lake.rows import row_at
from memlake.lake.schema import SYSTEM_FIELDS

SYSTEM_COLUMNS = tuple(f.name for f in SYSTEM_FIELDS)  # ("_deleted", "_seq")
#: an extra condition for `scan`: a boolean mask over one segment's table
Mask = Callable[[pa.Table], pa.ChunkedArray | pa.Array]


class RowLocation(NamedTuple):
    """Where the newest version of a row is: its commit seq, segment position and row number
    in that segment, and whether that version is a tombstone."""

    seq: int
    segment: int
    row: int
    deleted: bool

    @property
    def is_live(self) -> bool:
        return not self.deleted


def visible(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row as readers see it: without the system columns."""
    for col in SYSTEM_COLUMNS:
        row.pop(col, None)
    return row


def _hits(mask: pa.ChunkedArray | pa.Array) -> pa.Array:
    return pc.indices_nonzero(pc.fill_null(mask, False))


class Scans:
    """The index-free half of memlake.lake.snapshot.TableView."""

    segments: tuple[SegmentRef, ...]
    #: segments the id index could not read (position -> why): a read that may need one of
    #: them raises its CorruptObject, the others go on (docs/decisions/2701)
    unreadable: dict[int, CorruptObject]

    def segment_table(self, pos: int) -> pa.Table:
        raise NotImplementedError

    def raise_if_unreadable_may_hold(self, row_id: str, newest: tuple[int, int] | None) -> None:
        """Raise the error of an unreadable segment whose id range may hold a newer version of
        row_id than the (seq, segment) `newest` readable one (None: no readable version)."""
        for pos, error in self.unreadable.items():
            ref = self.segments[pos]
            if ref.min_id and ref.max_id and not ref.min_id <= row_id <= ref.max_id:
                continue
            if newest is None or (ref.seq, pos) > newest:
                raise error

    def scan(
        self, column: str, values: list[str], extra: Mask | None = None
    ) -> dict[str, dict[str, Any]]:
        """Live rows whose `column` is in `values` (and, with `extra`, whose row passes it: use
        it only for columns a row id never changes, such as a message's seq), by id.

        A write makes a new snapshot, and both the id index (a Python dict over every row) and
        the live table (a copy of every live row) of a table are rebuilt for it unless the
        previous snapshot built them. The layers' lookups (an episode's links, a concept's
        links, a thread's messages) touch few rows of large tables, so they scan instead: one
        vectorised pass finds the ids with a matching version in any segment, a second finds
        every version of just those ids, and the newest version of each (by commit seq, then
        segment and row, as the index resolves them) is kept if it is live and still matches.
        """
        value_set = pa.array(values, pa.string())
        candidates: set[str] = set()
        for pos in range(len(self.segments)):
            try:
                table = self.segment_table(pos)
            except CorruptObject:
                if self._rules_out(pos, column, values):
                    continue  # its stats say no row has one of the values: not needed
                raise
            mask = pc.is_in(table.column(column), value_set=value_set)
            if extra is not None:
                mask = pc.and_(mask, extra(table))
            rows = _hits(mask)
            if len(rows):
                candidates.update(table.column("id").take(rows).to_pylist())
        if not candidates:
            return {}
        id_set = pa.array(sorted(candidates), pa.string())
        best: dict[str, tuple[int, int, int]] = {}  # id -> (seq, segment, row)
        for pos, seg in enumerate(self.segments):
            try:
                table = self.segment_table(pos)
            except CorruptObject:
                if not any(seg.min_id <= rid <= seg.max_id for rid in candidates):
                    continue  # no version of a candidate can be in it
                raise
            rows = _hits(pc.is_in(table.column("id"), value_set=id_set))
            if not len(rows):
                continue
            ids = table.column("id").take(rows).to_pylist()
            seqs = table.column("_seq").take(rows).to_pylist()
            for rid, rseq, row in zip(ids, seqs, rows.to_pylist(), strict=True):
                key = (seg.seq if rseq is None else rseq, pos, row)
                if rid not in best or key >= best[rid]:
                    best[rid] = key
        by_segment: dict[int, list[int]] = {}
        for _seq, pos, row in best.values():
            by_segment.setdefault(pos, []).append(row)
        wanted = set(values)
        out: dict[str, dict[str, Any]] = {}
        for pos, numbers in by_segment.items():
            for row in self.segment_table(pos).take(pa.array(numbers, pa.int64())).to_pylist():
                if row.pop("_deleted") or row.get(column) not in wanted:
                    continue
                out[row["id"]] = visible(row)
        return out

    def _rules_out(self, pos: int, column: str, values: list[str]) -> bool:
        """The segment's recorded stats prove no row of it has `column` in `values` (a
        damaged segment a scan can do without)."""
        stat = self.segments[pos].stats.get(column)
        held = stat.get("values") if isinstance(stat, dict) else None
        return held is not None and not set(held) & set(values)

    def where(self, column: str, values: Iterable[str]) -> list[dict[str, Any]]:
        """Live rows whose `column` is one of `values` (a scan: no id index)."""
        wanted = list(dict.fromkeys(values))
        return list(self.scan(column, wanted).values()) if wanted else []

    def may_hold(self, row_id: str) -> list[int]:
        """Positions of the segments whose id range may hold a version of row_id."""
        return [
            pos
            for pos, ref in enumerate(self.segments)
            if not (ref.min_id and ref.max_id) or ref.min_id <= row_id <= ref.max_id
        ]

    def find(self, row_id: str) -> tuple[RowLocation, dict[str, Any]] | None:
        """The newest version of row_id (a tombstone too) and its row, without the id index:
        reads only the segments whose id range may hold it, newest first, and stops at a
        segment older than the version found."""
        segs = self.segments
        best: tuple[RowLocation, dict[str, Any]] | None = None
        for pos in sorted(range(len(segs)), key=lambda p: (segs[p].seq, p), reverse=True):
            ref = segs[pos]
            if best is not None and ref.seq < best[0].seq:
                break  # every row of an older segment is older than the one found
            if ref.min_id and ref.max_id and not ref.min_id <= row_id <= ref.max_id:
                continue
            table = self.segment_table(pos)
            for at in _hits(pc.equal(table.column("id"), row_id)).to_pylist():
                data = row_at(table, at)
                seq = ref.seq if data.get("_seq") is None else int(data["_seq"])
                loc = RowLocation(seq, pos, at, bool(data["_deleted"]))
                if best is None or loc >= best[0]:  # (seq, segment, row) decide; never equal
                    best = (loc, visible(data))
        return best

    def written_at(self, seq: int, row_id: str) -> dict[str, Any] | None:
        """The live row of row_id that the commit of version `seq` wrote, if any (an episode's
        revision history reads each revision from the manifest of its version)."""
        for pos, seg in enumerate(self.segments):
            if seg.seq != seq:
                continue
            table = self.segment_table(pos)
            hits = table.filter(pc.equal(table.column("id"), row_id)).to_pylist()
            if hits and not hits[-1]["_deleted"]:
                return visible(hits[-1])
        return None
