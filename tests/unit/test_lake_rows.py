"""memlake.lake.rows.row_at: a row of a table equal to what to_pylist gives, for every column
type the lake stores, across chunk boundaries, and forgotten with its table."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memlake.lake import rows
from memlake.lake.rows import row_at

SCHEMA = pa.schema(
    [("id", pa.string()), ("content", pa.string()), ("tags", pa.list_(pa.string())),
     ("at", pa.timestamp("us", tz="UTC")), ("ok", pa.bool_()), ("n", pa.int64())]
)  # fmt: skip


def _table() -> pa.Table:
    when = datetime(2026, 11, 26, 15, 0, tzinfo=UTC)
    first = pa.table(
        {
            "id": ["a", "b"],
            "content": ["x" * 3000, None],
            "tags": [["t1", "t2"], None],
            "at": pa.array([when, None], pa.timestamp("us", tz="UTC")),
            "ok": [True, None],
            "n": pa.array([7, None], pa.int64()),
        },
        schema=SCHEMA,
    )
    second = pa.table(
        {
            "id": ["c"],
            "content": ["é ü"],
            "tags": [[]],
            "at": pa.array([when], pa.timestamp("us", tz="UTC")),
            "ok": [False],
            "n": pa.array([-1], pa.int64()),
        },
        schema=SCHEMA,
    )
    return pa.concat_tables([first, second])  # two chunks a column


def test_each_row_equals_to_pylist_across_chunks() -> None:
    table = _table()
    assert table.column("id").num_chunks == 2
    want = table.to_pylist()
    assert [row_at(table, i) for i in range(table.num_rows)] == want
    assert row_at(table, 0)["at"].tzinfo is not None


def test_a_row_outside_the_table_is_an_index_error() -> None:
    table = _table()
    for i in (-1, 3):
        with pytest.raises(IndexError):
            row_at(table, i)


def test_the_chunks_are_forgotten_with_their_table() -> None:
    table = _table()
    row_at(table, 1)
    key = id(table)
    assert key in rows._CELLS
    del table
    gc.collect()
    assert key not in rows._CELLS


def test_null_cells_are_none_where_a_chunk_has_none_some_or_only_nulls() -> None:
    """Nulls are read from each chunk's validity, not from a scalar: a chunk with only nulls,
    one with some (in a slice: its offset counts) and one with none give to_pylist's rows."""
    only_nulls = pa.table(
        {
            "id": ["d", "e"],
            "content": pa.array([None, None], pa.string()),
            "tags": pa.array([None, None], pa.list_(pa.string())),
            "at": pa.array([None, None], pa.timestamp("us", tz="UTC")),
            "ok": pa.array([None, None], pa.bool_()),
            "n": pa.array([None, None], pa.int64()),
        },
        schema=SCHEMA,
    )
    sliced = _table().slice(1, 2)  # starts at a row with nulls, inside the first chunk
    table = pa.concat_tables([sliced, only_nulls, _table()])
    want = table.to_pylist()
    assert [row_at(table, i) for i in range(table.num_rows)] == want
    assert row_at(table, 2) == {"id": "d", **dict.fromkeys(SCHEMA.names[1:])}
    assert row_at(table, 0)["content"] is None and row_at(table, 1)["content"] == "é ü"


def test_utc_timestamps_are_pyarrows_own_datetimes() -> None:
    """A UTC microsecond timestamp is read from its int64 value (no scalar): the datetime
    as_py gives, with the same tzinfo, in a sliced chunk, at the ends of what a datetime
    holds and beyond them (as_py's own answer), and a zoned or naive one as before."""
    low, high = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)
    when = [datetime(2026, 11, 27, 8, 30, 1, 234567, tzinfo=UTC), low, high, None]
    micros = [-(2**62), 2**62]  # outside a datetime's years
    table = pa.concat_tables(
        [
            pa.table({"at": pa.array([None, *when], pa.timestamp("us", tz="UTC"))}).slice(1),
            pa.table({"at": pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC"))}),
        ]
    )
    for i, want in enumerate(when):
        got = row_at(table, i)["at"]
        assert got == want and (want is None or got.tzinfo is table[0][i].as_py().tzinfo)
        assert got is None or got.isoformat() == table[0][i].as_py().isoformat()
    for i in (4, 5):
        with pytest.raises(Exception) as beyond:
            table[0][i].as_py()
        with pytest.raises(type(beyond.value)):
            row_at(table, i)
    other = pa.table(
        {
            "paris": pa.array([when[0]], pa.timestamp("us", tz="Europe/Paris")),
            "naive": pa.array([when[0].replace(tzinfo=None)], pa.timestamp("us")),
            "ms": pa.array([when[0]], pa.timestamp("ms", tz="UTC")),
        }
    )
    assert row_at(other, 0) == other.to_pylist()[0]
    assert row_at(other, 0)["paris"].utcoffset() == other[0][0].as_py().utcoffset()


def test_strings_are_read_from_their_offsets_as_as_py_reads_them(tmp_path: Path) -> None:
    """A string cell is its bytes decoded from the chunk's offsets: sliced chunks (their
    offset counts), empty strings, a chunk of only empty ones (no data buffer), non-ASCII,
    nulls between them; a column null in every row is None without being read; a large
    string column goes through as_py; and a table read back from Parquet, as the lake reads."""
    texts = ["", "é ü ∑ 𝄞", None, "x" * 70_000, "", "last"]
    sliced = pa.table({"s": pa.array(["skip", *texts], pa.string())}).slice(1)
    empty = pa.table({"s": pa.array(["", ""], pa.string())})
    assert (
        empty.column("s").chunk(0).buffers()[2] is None
        or empty.column("s").chunk(0).buffers()[2].size == 0
    )
    table = pa.concat_tables([sliced, empty, sliced.slice(2, 3)])
    assert table.column("s").num_chunks == 3
    assert [row_at(table, i) for i in range(table.num_rows)] == table.to_pylist()
    mixed = pa.table(
        {
            "none": pa.array([None, None], pa.string()),
            "large": pa.array(["é", None], pa.large_string()),
            "s": pa.array(["a", "b"], pa.string()),
        }
    )
    assert [row_at(mixed, i) for i in range(2)] == mixed.to_pylist()
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=3)
    back = pq.read_table(path)
    assert [row_at(back, i) for i in range(back.num_rows)] == back.to_pylist() == table.to_pylist()


def test_int64_cells_and_columns_left_out() -> None:
    """int64 cells are read from their values (a sliced chunk's offset counts, nulls between
    them, the ends of int64); `leave_out` gives the row without those columns, and the same
    table still gives whole rows."""
    values = [None, -(2**63), 0, 2**63 - 1, None, 42]
    table = pa.concat_tables(
        [
            pa.table({"n": pa.array([7, *values], pa.int64()), "s": ["x", *"abcdef"]}).slice(1),
            pa.table({"n": pa.array([5], pa.int64()), "s": ["g"]}),
        ]
    )
    want = table.to_pylist()
    assert [row_at(table, i) for i in range(table.num_rows)] == want
    assert [row_at(table, i, ("s",)) for i in range(table.num_rows)] == [
        {"n": row["n"]} for row in want
    ]
    assert row_at(table, 3) == want[3] and type(row_at(table, 3)["n"]) is int
