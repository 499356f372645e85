"""One row of a segment's table as a dict, without slicing the table.

`table.slice(i, 1).to_pylist()[0]` costs ~70 us for an episode row (26 columns): the slice
makes a table and every column's chunk anew. A search turns its ~10 hits into rows, ~1 ms of a
~5 ms vector search at 20k episodes. `row_at` keeps, per table, its columns' chunks and where
each starts, and converts just the row's cell of each (`Scalar.as_py`, what to_pylist calls:
the same values), ~25 us. A null cell is None without a scalar: each chunk's nulls are looked
up in its validity (kept as a numpy bool array when the chunk has some), so a row whose
optional fields are unset costs less (10 rows with 18 of 26 columns null: 0.52 -> 0.35 ms after
a numpy pass over 614 MB, 0.39 -> 0.13 ms warm; a 20k vector-only search, paired: -0.21 ms;
docs/performance.md, ninth round). A UTC timestamp cell is the epoch plus its microseconds
(`_micros`: 1.5 against 6-7.5 us for as_py, the same datetime; -0.07 ms for the 20k search's
hits, two timestamps a row set). A string cell is its bytes decoded from the chunk's offsets
and an int64 cell is read from its values (memoryviews: indexing one gives a Python int), a
column null in every row is not looked at, and a view's rows leave the system columns out
unread (`leave_out`): 10 rows after a numpy pass over 614 MB, 0.37 -> 0.22-0.25 ms (stop 41). The
chunks are remembered for as long as the table object lives (weakref.finalize), so nothing
keeps an evicted segment in memory.
"""

from __future__ import annotations

import weakref
from bisect import bisect_right
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa

#: a chunk's validity when every cell is null (no array needed)
_ALL_NULL = np.zeros(0, bool)


def _validity(chunk: pa.Array) -> np.ndarray | None:
    """Which cells of `chunk` are set: None when all are, _ALL_NULL when none is."""
    nulls = chunk.null_count
    if nulls == 0:
        return None
    if nulls == len(chunk):
        return _ALL_NULL
    valid: np.ndarray = chunk.is_valid().to_numpy(zero_copy_only=False)
    return valid


def _micros(chunk: pa.Array) -> np.ndarray | None:
    """A UTC microsecond timestamp chunk's values as int64 (a view of its buffer), else None:
    `as_py` of such a cell took 6-7.5 us, its epoch plus a timedelta ~1.5 us (the same
    datetime, with pyarrow's own UTC tzinfo)."""
    kind = chunk.type
    if not pa.types.is_timestamp(kind) or kind.unit != "us" or kind.tz != "UTC":
        return None
    data = chunk.buffers()[1]
    if data is None:
        return None
    return np.frombuffer(data, np.int64, count=len(chunk), offset=chunk.offset * 8)


def _strings(chunk: pa.Array) -> tuple[memoryview, memoryview] | None:
    """A string chunk's offsets (int32, from its first cell on) and its bytes, as memoryviews
    (indexing one gives a Python int), else None: a cell is then its bytes decoded, ~1 us
    against ~3-5 us for as_py after a pass over memory (the same str)."""
    if chunk.type != pa.string():
        return None
    _, offsets, data = chunk.buffers()
    if offsets is None:
        return None
    first, end = chunk.offset * 4, (chunk.offset + len(chunk) + 1) * 4
    return memoryview(offsets)[first:end].cast("i"), memoryview(data if data else b"")


def _ints(chunk: pa.Array) -> memoryview | None:
    """An int64 chunk's values as a memoryview (indexing it gives a Python int), else None."""
    if chunk.type != pa.int64():
        return None
    data = chunk.buffers()[1]
    if data is None:
        return None
    return memoryview(data)[chunk.offset * 8 : (chunk.offset + len(chunk)) * 8].cast("q")


#: a column of _Cells: its name, chunks, each chunk's first row, validity, and UTC
#: microseconds, strings (offsets and bytes) or int64 values where it has them
_Column = tuple[str, list[pa.Array], list[int], list[Any], list[Any], list[Any], list[Any]]


class _Cells:
    """A table's columns as chunk lists, the first row of each chunk, its validity and, for a
    UTC timestamp, string or int64 column, its values read without a scalar. Columns null in
    every row are left out of the loop: a row starts as every column None, but for the columns
    `row` is asked to leave out (a view's rows: the system columns), which it never reads."""

    def __init__(self, table: pa.Table) -> None:
        self.names = table.column_names
        self.columns: list[_Column] = []
        for name, column in zip(self.names, table.columns, strict=True):
            if column.null_count == len(column):
                continue
            chunks, starts, at = column.chunks, [], 0
            for chunk in chunks:
                starts.append(at)
                at += len(chunk)
            self.columns.append(
                (
                    name,
                    chunks,
                    starts,
                    [_validity(chunk) for chunk in chunks],
                    [_micros(chunk) for chunk in chunks],
                    [_strings(chunk) for chunk in chunks],
                    [_ints(chunk) for chunk in chunks],
                )
            )
        self.rows = table.num_rows
        self._shapes: dict[tuple[str, ...], tuple[dict[str, None], list[_Column]]] = {}

    def row(self, i: int, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
        if not 0 <= i < self.rows:
            raise IndexError(f"row {i} of a table of {self.rows}")
        shape = self._shapes.get(leave_out)
        if shape is None:
            empty = {name: None for name in self.names if name not in leave_out}
            shape = empty, [c for c in self.columns if c[0] not in leave_out]
            self._shapes[leave_out] = shape
        out: dict[str, Any] = shape[0].copy()
        for name, chunks, starts, valid, micros, strings, ints in shape[1]:
            c = bisect_right(starts, i) - 1 if len(chunks) > 1 else 0
            at, set_ = i - starts[c], valid[c]
            if not (set_ is None or (set_ is not _ALL_NULL and set_[at])):
                continue
            text, us, num = strings[c], micros[c], ints[c]
            if text is not None:
                out[name] = str(text[1][text[0][at] : text[0][at + 1]], "utf-8")
            elif num is not None:
                out[name] = num[at]
            elif us is not None and _MIN_US <= us[at] <= _MAX_US:
                out[name] = _EPOCH + timedelta(microseconds=int(us[at]))
            else:
                out[name] = chunks[c][at].as_py()
        return out


#: the Unix epoch as pyarrow gives a UTC timestamp (its tzinfo), and the microseconds a
#: datetime holds from it (outside: as_py, which says what it makes of them)
_EPOCH: datetime = pa.scalar(0, pa.timestamp("us", tz="UTC")).as_py()
_MIN_US = (datetime.min.replace(tzinfo=_EPOCH.tzinfo) - _EPOCH) // timedelta(microseconds=1)
_MAX_US = (datetime.max.replace(tzinfo=_EPOCH.tzinfo) - _EPOCH) // timedelta(microseconds=1)


_CELLS: dict[int, _Cells] = {}


def row_at(table: pa.Table, i: int, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
    """Row `i` of `table` as a dict of Python values (equal to its to_pylist()[i]), without
    the columns `leave_out` names (not read at all)."""
    key = id(table)
    cells = _CELLS.get(key)
    if cells is None:
        cells = _Cells(table)
        if _CELLS.setdefault(key, cells) is cells:
            weakref.finalize(table, _CELLS.pop, key, None)  # before the id can be reused
    return cells.row(i, leave_out)
