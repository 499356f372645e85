"""read_parquet: a segment's table, decoded from memory Arrow owns (never over the Python bytes,
whose PyBuffer Arrow's decoding threads may release while the interpreter exits: an abort,
apache/arrow#34314)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from memlake.lake import segments
from memlake.lake.segments import encode_table, read_parquet


def _table(rows: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"{i:026d}" for i in range(rows)], pa.string()),
            "n": pa.array(range(rows), pa.int64()),
            "text": pa.array(["é ü 雪 " * (i % 7) for i in range(rows)], pa.string()),
        }
    )


@pytest.mark.parametrize("rows", [0, 1, 5_000])
def test_a_segment_reads_back_as_written(rows: int) -> None:
    table = _table(rows)
    assert read_parquet(encode_table(table)).equals(table)


def test_arrow_decodes_its_own_copy_not_the_python_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The core dump of `memlake export` exiting -6: an Arrow pool thread released the last
    reader of a PyBuffer at exit (~SerializedPageReader -> ~BufferReader -> ~PyBuffer ->
    PyGILState_Ensure -> pthread_exit -> terminate). So what Arrow reads from must be a buffer
    of its own, not the bytes (the reader given the bytes wraps them in a PyBuffer)."""
    data = encode_table(_table(100))
    bytes_at = pa.py_buffer(data).address
    given: list[Any] = []
    real = pa.BufferReader

    def spy(source: Any) -> Any:
        given.append(source)
        return real(source)

    monkeypatch.setattr(segments.pa, "BufferReader", spy)
    assert read_parquet(data).num_rows == 100
    (source,) = given
    assert isinstance(source, pa.Buffer), type(source)
    assert source.address != bytes_at and source.size == len(data)
    assert source.to_pybytes() == data


def test_a_bytearray_is_free_once_read() -> None:
    """Nothing Arrow keeps (the table included) holds the caller's memory: a bytearray can be
    resized right after (an exported buffer refuses that with BufferError)."""
    table = _table(50)
    data = bytearray(encode_table(table))
    got = read_parquet(data)  # type: ignore[arg-type]
    data.clear()
    assert got.equals(table)


def test_text_columns_carry_no_statistics_and_the_rest_do() -> None:
    """A text's min and max would be two more copies of it in the footer (an episode's
    content: a one-row segment 21 -> 8 KB without them)."""
    import io

    import pyarrow.parquet as pq

    table = _table(3).append_column(
        "tags", pa.array([["a", "b"], [], ["c"]], pa.list_(pa.string()))
    )
    meta = pq.ParquetFile(io.BytesIO(encode_table(table))).metadata.row_group(0)
    stats = {
        meta.column(i).path_in_schema: meta.column(i).is_stats_set for i in range(meta.num_columns)
    }
    assert stats == {"id": True, "n": True, "text": False, "tags.list.element": False}
