"""Rows of a snapshot by column value, without the table's id index or its live table.

A write makes a new snapshot, and both the id index (a Python dict over every row) and the live
table (a copy of every live row) of a table are rebuilt for it unless the previous snapshot
built them. The layers' lookups (an episode's links, a concept's links, a thread's messages)
touch few rows of large tables, so they scan instead: one vectorised pass finds the ids with a
matching version in any segment, a second finds every version of just those ids, and the
newest version of each (by commit seq, then segment and row, as TableView resolves them) is
kept if it is live and still matches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from memlake.lake.snapshot import TableView

Mask = Callable[[pa.Table], pa.ChunkedArray | pa.Array]


def _hits(table: pa.Table, mask: pa.ChunkedArray | pa.Array) -> pa.Array:
    return pc.indices_nonzero(pc.fill_null(mask, False))


def scan(
    view: TableView, column: str, values: list[str], extra: Mask | None = None
) -> dict[str, dict[str, Any]]:
    """Live rows whose `column` is in `values` (and, with `extra`, whose row passes it: use it
    only for columns a row id never changes, such as a message's seq)."""
    value_set = pa.array(values, pa.string())
    candidates: set[str] = set()
    for pos in range(len(view.segments)):
        table = view.segment_table(pos)
        mask = pc.is_in(table.column(column), value_set=value_set)
        if extra is not None:
            mask = pc.and_(mask, extra(table))
        rows = _hits(table, mask)
        if len(rows):
            candidates.update(table.column("id").take(rows).to_pylist())
    if not candidates:
        return {}
    id_set = pa.array(sorted(candidates), pa.string())
    best: dict[str, tuple[tuple[int, int, int], int]] = {}  # id -> ((seq, pos, row), pos)
    for pos, seg in enumerate(view.segments):
        table = view.segment_table(pos)
        rows = _hits(table, pc.is_in(table.column("id"), value_set=id_set))
        if not len(rows):
            continue
        ids = table.column("id").take(rows).to_pylist()
        seqs = table.column("_seq").take(rows).to_pylist()
        for rid, rseq, row in zip(ids, seqs, rows.to_pylist(), strict=True):
            key = (seg.seq if rseq is None else rseq, pos, row)
            if rid not in best or key >= best[rid][0]:
                best[rid] = (key, pos)
    by_segment: dict[int, list[int]] = {}
    for (_seq, pos, row), _ in best.values():
        by_segment.setdefault(pos, []).append(row)
    wanted = set(values)
    out: dict[str, dict[str, Any]] = {}
    for pos, rows_ in by_segment.items():
        for row in view.segment_table(pos).take(pa.array(rows_, pa.int64())).to_pylist():
            if row.pop("_deleted") or row.get(column) not in wanted:
                continue
            row.pop("_seq", None)
            out[row["id"]] = row
    return out
