"""`memlake export` / `memlake import`: a tenant's tables as JSON Lines, to move or back up a lake.

Each line is {"table": "<name>", "row": {...}} with JSON-safe values: timestamps as ISO 8601
UTC, binary as base64, embeddings as lists of floats, NaN as null. Export reads ONE snapshot
(a consistent point in time) and writes every table the tenant has, table by table, live rows
only; without vectors (`--no-vectors`) it leaves out the search vectors (the episode_chunks
table), which are most of an export's bytes. Import checks the whole
file first (known tables, known columns, values that fit the column type, and every row
against its table's model in memlake.stored_rows: required fields, ids, limits, enums, time
spans), so a bad line writes nothing; then it commits in batches. An episode's vectors commit
with the episode (so they are reused, not recomputed); an episode without them is embedded by
the lake's write hooks like any new episode (docs/decisions/1031). A row equal to the one the
lake holds is skipped, so importing the same file again writes nothing. A column this release
no longer has (episodes' never-written `embedding`, decision 1146) is dropped on import, so
files of older releases still import.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

from memlake.episodes import RETIRED_COLUMNS
from memlake.episodes import TABLE as EPISODES
from memlake.errors import InvalidArgument, NotFound
from memlake.ids import check_id, check_tenant
from memlake.lake import Lake, Snapshot, Transaction
from memlake.lake.scans import SYSTEM_COLUMNS
from memlake.lake.schema import Catalog, rows_to_table
from memlake.search.index.chunks import CHUNKS_TABLE
from memlake.stored_rows import check_row
from memlake.transfer_json import Progress, from_json, json_safe

MAX_LINE_BYTES = 32 * 1024 * 1024


def tenant_snapshot(lake: Lake, tenant: str) -> Snapshot:
    """The tenant's newest snapshot; NotFound when the lake holds no data for it."""
    snap = lake.snapshot(check_tenant(tenant))
    if snap.version == 0:
        raise NotFound(
            f"tenant {tenant} has no data in this lake",
            hint="Check --tenant and the lake (--data, or MEMLAKE_STORE / MEMLAKE_BUCKET).",
        )
    return snap


def export_tenant(
    lake: Lake, tenant: str, out: IO[bytes], *, progress: bool = True, vectors: bool = True
) -> dict[str, int]:
    """Write every table of the tenant's newest snapshot; returns rows written per table.

    Raises NotFound (before writing a byte) when the lake has no data for the tenant."""
    snap = tenant_snapshot(lake, tenant)
    derived = {name for name, spec in lake.tables.items() if spec.derived}
    names = sorted(
        (n for n in snap.manifest.tables if n not in derived), key=lambda n: (n != EPISODES, n)
    )
    if not vectors:
        names = [n for n in names if n != CHUNKS_TABLE]
    tables = {name: snap.table(name).live_table() for name in names}
    bar = Progress(f"export {tenant}", sum(t.num_rows for t in tables.values()))
    counts: dict[str, int] = {}
    for name, table in tables.items():
        for batch in table.to_batches(max_chunksize=1000):
            for row in batch.to_pylist():
                line = {"table": name, "row": json_safe(row)}
                out.write(json.dumps(line, ensure_ascii=False, allow_nan=False).encode())
                out.write(b"\n")
            if progress:
                bar.update(batch.num_rows)
        counts[name] = table.num_rows
    if progress:
        bar.close()
    return counts


@dataclass
class ImportReport:
    rows: int = 0
    written: int = 0
    unchanged: int = 0
    commits: int = 0


@dataclass(frozen=True)
class _Limits:
    dim: int
    max_content_bytes: int | None
    tables: Catalog  # the importing lake's


def _parse_line(raw: bytes, lineno: int, limits: _Limits) -> tuple[str, dict[str, Any]]:
    where = f"line {lineno}"
    hint = 'Each line must be {"table": ..., "row": {...}} as `memlake export` writes it.'
    if len(raw) > MAX_LINE_BYTES:
        raise InvalidArgument(f"{where} is over {MAX_LINE_BYTES} bytes", hint=hint)
    try:
        item = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise InvalidArgument(f"{where} is not valid JSON", hint=hint) from None
    if not isinstance(item, dict) or set(item) != {"table", "row"}:
        raise InvalidArgument(f"{where} needs exactly the keys 'table' and 'row'", hint=hint)
    table, row = item["table"], item["row"]
    if not isinstance(table, str) or table not in limits.tables or limits.tables[table].derived:
        known = ", ".join(sorted(n for n, spec in limits.tables.items() if not spec.derived))
        raise InvalidArgument(f"{where}: unknown table {str(table)[:60]!r}", hint=f"Known: {known}")
    if not isinstance(row, dict):
        raise InvalidArgument(f"{where}: row must be an object", hint=hint)
    try:
        check_id(row.get("id"), field=f"{where}: row.id")
    except InvalidArgument as e:
        raise InvalidArgument(e.message, hint=e.hint) from None
    if table == EPISODES:
        row = {k: v for k, v in row.items() if k not in RETIRED_COLUMNS}
    schema = limits.tables[table].schema(limits.dim)
    unknown = sorted(k for k in row if k not in schema.names or k in SYSTEM_COLUMNS)
    if unknown:
        raise InvalidArgument(
            f"{where}: unknown columns for table {table}: {', '.join(unknown[:5])[:200]}",
            hint="Import files of the same or an older memlake version than this one.",
        )
    try:
        fields = {f.name: f.type for f in schema}
        converted = {k: from_json(v, fields[k], f"{where}: {k}") for k, v in row.items()}
    except ValueError as e:
        raise InvalidArgument(str(e), hint=hint) from None
    check_row(limits.tables[table], converted, where, max_content_bytes=limits.max_content_bytes)
    return table, converted


_Item = tuple[int, str, dict[str, Any]]  # (line number, table, row)
_ARROW_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError)


def _normalise(table: str, items: list[_Item], lake: Lake) -> list[dict[str, Any]]:
    """Rows as pyarrow reads them back (so they compare equal to stored rows)."""
    schema = lake.schema(table)
    try:
        arrow = rows_to_table([row for _, _, row in items], schema)
    except _ARROW_ERRORS:
        for lineno, _, row in items:  # name the first line that does not fit
            try:
                rows_to_table([row], schema)
            except _ARROW_ERRORS as e:
                raise InvalidArgument(
                    f"line {lineno}: the row does not fit table {table}: {e}"[:300],
                    hint="Check that the file is an unmodified `memlake export`.",
                ) from None
        raise
    return arrow.drop_columns(sorted(SYSTEM_COLUMNS)).to_pylist()  # type: ignore[no-any-return]


def _lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, line) of every non-blank line."""
    with path.open("rb") as fh:
        offset = 0
        for lineno, raw in enumerate(fh, start=1):
            if raw.strip():
                yield lineno, offset, raw
            offset += len(raw)


def _batches(
    path: Path, limits: _Limits, size: int, vectors_at: dict[str, int] | None = None
) -> Iterator[list[_Item]]:
    """The file's rows in batches; with vectors_at, also note where the episode_chunks row of
    an episode listed before it is (export writes episodes first)."""
    batch: list[_Item] = []
    episodes: set[str] = set()
    for lineno, offset, raw in _lines(path):
        table, row = _parse_line(raw, lineno, limits)
        if vectors_at is not None and table == EPISODES:
            episodes.add(row["id"])
        elif vectors_at is not None and table == CHUNKS_TABLE and row["id"] in episodes:
            vectors_at[row["id"]] = offset
        batch.append((lineno, table, row))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _normalised(batch: list[_Item], lake: Lake) -> list[tuple[str, dict[str, Any]]]:
    by_table: dict[str, list[_Item]] = {}
    for item in batch:
        by_table.setdefault(item[1], []).append(item)
    out: list[tuple[str, dict[str, Any]]] = []
    for table, items in by_table.items():
        out.extend((table, r) for r in _normalise(table, items, lake))
    return out


class _Vectors:
    """Pairs each episode with its episode_chunks row (found by byte offset in pass 1), so both
    commit together and the search hook reuses the vectors instead of embedding again."""

    def __init__(self, lake: Lake, path: Path, at: dict[str, int], limits: _Limits) -> None:
        self.lake, self.path, self.at, self.limits = lake, path, at, limits
        self.sent: set[str] = set()

    def pair(self, rows: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
        out, extra = [], []
        with self.path.open("rb") as fh:
            for table, row in rows:
                if table == CHUNKS_TABLE and row["id"] in self.sent:
                    continue  # committed with its episode
                out.append((table, row))
                offset = self.at.get(row["id"]) if table == EPISODES else None
                if offset is not None and row["id"] not in self.sent:
                    fh.seek(offset)
                    item = (0, *_parse_line(fh.readline(), 0, self.limits))
                    extra.extend(_normalised([item], self.lake))
                    self.sent.add(row["id"])
        return out + extra


def import_tenant(
    lake: Lake,
    tenant: str,
    path: Path,
    *,
    batch_size: int = 500,
    progress: bool = True,
    max_content_bytes: int | None = None,
) -> ImportReport:
    check_tenant(tenant)
    if not 1 <= batch_size <= 10_000:
        raise InvalidArgument("batch size must be 1-10000")
    limits = _Limits(lake.dim, max_content_bytes, lake.tables)
    total = 0
    vectors_at: dict[str, int] = {}
    for batch in _batches(path, limits, batch_size, vectors_at):  # pass 1: check everything
        _normalised(batch, lake)
        total += len(batch)
    report = ImportReport(rows=total)
    vectors = _Vectors(lake, path, vectors_at, limits)
    bar = Progress(f"import {tenant}", total)
    for batch in _batches(path, limits, batch_size):  # pass 2: commit
        rows = vectors.pair(_normalised(batch, lake))

        def change(txn: Transaction, rows: list[tuple[str, dict[str, Any]]] = rows) -> int:
            written = 0
            for table, row in rows:
                if txn.get(table, row["id"]) == row:
                    continue
                txn.put(table, row)
                written += 1
            return written

        written = lake.commit(tenant, change)
        report.written += written
        report.unchanged += len(rows) - written
        report.commits += 1 if written else 0
        if progress:
            bar.update(len(batch))
    if progress:
        bar.close()
    return report
