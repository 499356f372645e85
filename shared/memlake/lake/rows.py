"""One row of a segment's table as a dict, without slicing the table.

`table.slice(i, 1).to_pylist()[0]` costs ~70 us for an episode row (26 columns): the slice
makes a table and every column's chunk anew. A search turns its ~10 hits into rows, ~1 ms of a
~5 ms vector search at 20k episodes. `row_at` keeps, per table, its columns' chunks and where
each starts, and converts just the row's cell of each (`Scalar.as_py`, what to_pylist calls:
the same values), ~25 us. The chunks are remembered for as long as the table object lives
(weakref.finalize), so nothing keeps an evicted segment in memory.
"""

from __future__ import annotations

import weakref
from bisect import bisect_right
from typing import Any

import pyarrow as pa


class _Cells:
    """A table's columns as chunk lists, and the first row of each chunk."""

    def __init__(self, table: pa.Table) -> None:
        self.names = table.column_names
        self.columns = [column.chunks for column in table.columns]
        self.starts = []
        for chunks in self.columns:
            starts, at = [], 0
            for chunk in chunks:
                starts.append(at)
                at += len(chunk)
            self.starts.append(starts)
        self.rows = table.num_rows

    def row(self, i: int) -> dict[str, Any]:
        if not 0 <= i < self.rows:
            raise IndexError(f"row {i} of a table of {self.rows}")
        out: dict[str, Any] = {}
        for name, chunks, starts in zip(self.names, self.columns, self.starts, strict=True):
            c = bisect_right(starts, i) - 1 if len(chunks) > 1 else 0
            out[name] = chunks[c][i - starts[c]].as_py()
        return out


_CELLS: dict[int, _Cells] = {}


def row_at(table: pa.Table, i: int) -> dict[str, Any]:
    """Row `i` of `table` as a dict of Python values (equal to its to_pylist()[i])."""
    key = id(table)
    cells = _CELLS.get(key)
    if cells is None:
        cells = _Cells(table)
        if _CELLS.setdefault(key, cells) is cells:
            weakref.finalize(table, _CELLS.pop, key, None)  # before the id can be reused
    return cells.row(i)
