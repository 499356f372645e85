"""Writing and reading immutable Parquet segments, with an in-memory cache.

Segment objects never change once written, so a cached table is valid forever; the cache is
bounded by bytes (LRU).
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import Future
from datetime import date, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from memlake.ids import new_id
from memlake.lake import checksums, keys
from memlake.lake.manifest import SegmentRef
from memlake.lake.schema import conform
from memlake.store.base import ObjectNotFound, ObjectStore

MAX_DISTINCT_STAT = 32
#: what a decoded table holds beyond its buffers' bytes (`Table.nbytes`), measured with
#: RssAnon over 3,000 one-row tables held (issue 47): ~0.6-1.4 KB a column chunk (its
#: ArrayData, buffers' headers and the pool's 64-byte rounding), a few KB a table. A one-row
#: episodes segment (25 columns) reports 418 bytes and holds 23-34 KB; charged only the 418,
#: a cache bounded at 256 MiB held ~600k of them (~20 GB) and a long soak grew ~100 MB a minute
TABLE_FIXED_BYTES = 4096
COLUMN_CHUNK_BYTES = 1024


def read_parquet(data: bytes) -> pa.Table:
    """A Parquet object's table, decoded from a copy in Arrow's own memory (~0.2 ms for 5 MB).

    Not over the bytes themselves: Arrow wraps a Python object in a PyBuffer, and its decoding
    threads hold readers of it (a column's page reader) after the read returns. The thread that
    drops the last one must take the GIL to release the bytes; while the interpreter exits it
    cannot, Python ends that thread inside Arrow's C++, and the process aborts ("terminate
    called without an active exception", exit -6, apache/arrow#34314). Seen in `memlake export`,
    `check` and `repair` one run in ~20-75 on busy cores; a core dump showed a pool thread in
    ~SerializedPageReader -> ~BufferReader -> ~PyBuffer -> PyGILState_Ensure -> pthread_exit.
    Memory Arrow owns is freed by any thread without the GIL.

    With Arrow's own threads: decoding on the calling thread alone was faster a segment in a
    loop (64 rows 3.2 -> 2.4 ms) but slower in a cold search, paired in one process (local
    disk 122 -> 141 ms at 10k x 20; stop 51, decision 4401), so it is not done."""
    owned = pa.allocate_buffer(len(data))
    memoryview(owned).cast("B")[:] = data
    return pq.ParquetFile(pa.BufferReader(owned)).read()


def encode_table(table: pa.Table) -> bytes:
    """A segment's Parquet bytes. Statistics (each column chunk's min and max, in the footer,
    uncompressed) for every column but text: a text's min and max are two whole values (an
    episode's content twice more, 3x a one-row segment's bytes), and pruning goes by the
    manifest's own stats (column_stats) and id ranges; DuckDB still prunes by id and times."""
    sink = io.BytesIO()
    stats = [f.name for f in table.schema if f.name == "id" or not _is_text(f.type)]
    pq.write_table(table, sink, compression="zstd", use_dictionary=True, write_statistics=stats)
    return sink.getvalue()


def _is_text(kind: pa.DataType) -> bool:
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _is_text(kind.value_type)
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _scalar(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def column_stats(table: pa.Table, columns: tuple[str, ...]) -> dict[str, Any]:
    """Min/max for ordered columns and the distinct set (when small) for strings, for pruning."""
    stats: dict[str, Any] = {}
    live = table.filter(pc.invert(table.column("_deleted"))) if table.num_rows else table
    for name in columns:
        if name not in live.column_names or live.num_rows == 0:
            continue
        col = live.column(name)
        if pa.types.is_string(col.type):
            distinct = pc.unique(col.drop_null()).to_pylist()
            has_null = col.null_count > 0
            stats[name] = {
                "values": sorted(distinct) if len(distinct) <= MAX_DISTINCT_STAT else None,
                "has_null": has_null,
            }
        else:
            mm = pc.min_max(col).as_py()
            stats[name] = {"min": _scalar(mm["min"]), "max": _scalar(mm["max"])}
    return stats


def write_segment(
    store: ObjectStore, tenant: str, table_name: str, table: pa.Table, stat_columns: tuple[str, ...]
) -> SegmentRef:
    ref, data = encode_segment(tenant, table_name, table, stat_columns)
    store.put(ref.key, data, if_absent=True)
    return ref


def encode_segment(
    tenant: str, table_name: str, table: pa.Table, stat_columns: tuple[str, ...]
) -> tuple[SegmentRef, bytes]:
    """A new segment's reference and bytes, not written yet (the caller puts them, create-
    exclusive, before any manifest names the reference)."""
    data = encode_table(table)
    key = keys.segment_key(tenant, table_name, new_id())
    ids = table.column("id")
    mm = pc.min_max(ids).as_py() if table.num_rows else {"min": "", "max": ""}
    ref = SegmentRef(
        key=key,
        seq=0,
        rows=table.num_rows,
        bytes=len(data),
        sha256=checksums.digest(data),
        min_id=mm["min"] or "",
        max_id=mm["max"] or "",
        stats=column_stats(table, stat_columns),
    )
    return ref, data


def held_bytes(table: pa.Table) -> int:
    """The memory a decoded table holds: its buffers and its fixed overhead (a small table's is
    most of it)."""
    chunks = sum(column.num_chunks for column in table.columns)
    return table.nbytes + TABLE_FIXED_BYTES + COLUMN_CHUNK_BYTES * chunks


class SegmentCache:
    """LRU of decoded segments keyed by object key, bounded by the memory they hold
    (`held_bytes`: their buffers and fixed overhead). A segment is read once however many
    threads ask for it at the same time: a search's hits are read ahead while it ranks them
    (TableView.read_ahead), and its lookup then waits for those reads instead of asking the
    store again."""

    def __init__(self, max_bytes: int = 1 << 30) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[pa.Table, int]] = OrderedDict()  # -> (table, held)
        self._bytes = 0
        self._lock = threading.Lock()
        self._reading: dict[str, Future[pa.Table]] = {}  # key -> the read in flight

    def add(self, key: str, table: pa.Table) -> None:
        """Remember a segment this process just wrote (saves reading it back)."""
        with self._lock:
            if key not in self._items:
                held = held_bytes(table)
                self._items[key] = (table, held)
                self._bytes += held
            self._evict()

    @property
    def nbytes(self) -> int:
        """The memory the cached tables hold (what the bound counts)."""
        return self._bytes

    def retire(self, keys: Iterable[str]) -> None:
        """Let go of segments a commit replaced (compaction's inputs, a rewrite's old part):
        the newest manifest no longer names them; a reader of an older snapshot reads one
        again."""
        with self._lock:
            for key in keys:
                item = self._items.pop(key, None)
                if item is not None:
                    self._bytes -= item[1]

    def _evict(self) -> None:
        while self._bytes > self.max_bytes and len(self._items) > 1:
            _, (_, held) = self._items.popitem(last=False)
            self._bytes -= held

    def cached(self, key: str) -> bool:
        """Whether the segment is held or being read (no read is started)."""
        with self._lock:
            return key in self._items or key in self._reading

    def read(self, store: ObjectStore, key: str, schema: pa.Schema, sha256: str = "") -> pa.Table:
        """The segment's rows; CorruptObject when the manifest names an object that is missing,
        does not match its recorded sha256 or is not Parquet (memlake.lake.checksums). A
        thread asking while another reads it waits for that read; if that read failed, it
        reads the segment itself (a read ahead's failure is nobody's answer)."""
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
                if item[0].schema.equals(schema, check_metadata=False):
                    return item[0]
            reading = self._reading.get(key)
            mine = reading is None
            if reading is None:
                reading = self._reading[key] = Future()
        if mine:
            return self._read_for_all(reading, store, key, schema, sha256)
        if reading.exception() is None:
            table = reading.result()
            if table.schema.equals(schema, check_metadata=False):
                return table
        return self._read(store, key, schema, sha256)

    def _read_for_all(
        self,
        reading: Future[pa.Table],
        store: ObjectStore,
        key: str,
        schema: pa.Schema,
        sha256: str,
    ) -> pa.Table:
        try:
            table = self._read(store, key, schema, sha256)
        except BaseException as e:
            reading.set_exception(e)
            raise
        else:
            reading.set_result(table)
            return table
        finally:
            with self._lock:
                del self._reading[key]

    def _read(self, store: ObjectStore, key: str, schema: pa.Schema, sha256: str) -> pa.Table:
        try:
            raw = checksums.verify(key, store.get(key), sha256)
        except ObjectNotFound as e:
            raise checksums.missing(key) from e
        try:
            parsed = read_parquet(raw)
        except (pa.ArrowException, OSError, ValueError) as e:
            raise checksums.damaged(key, f"not readable Parquet ({e})") from e
        table = conform(parsed, schema)
        self.add(key, table)
        return table
