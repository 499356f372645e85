"""`memlake export` / `memlake import`: a tenant's tables as JSON Lines, to move or back up a lake.

Each line is {"table": "<name>", "row": {...}} with JSON-safe values: timestamps as ISO 8601
UTC, binary as base64, embeddings as lists of floats, NaN as null. Export reads ONE snapshot
(a consistent point in time) and writes every table the tenant has, table by table, live rows
only. Import checks the whole file first (known tables, valid ids, known columns, values that
fit the column type), so a bad line writes nothing; then it commits in batches. A row equal to
the one the lake holds is skipped, so importing the same file again writes nothing.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

from memlake.errors import InvalidArgument
from memlake.features import load_features
from memlake.ids import check_id, check_tenant
from memlake.lake import Lake, Transaction
from memlake.lake.schema import SYSTEM_FIELDS, TABLES, rows_to_table
from memlake.timeutil import iso, parse_time

MAX_LINE_BYTES = 32 * 1024 * 1024
SYSTEM_COLUMNS = frozenset(f.name for f in SYSTEM_FIELDS)


class Progress:
    """A one-line progress bar on stderr. Hand-written rather than tqdm: the Lambda image
    installs exactly pyproject's runtime dependencies, and a CLI-only bar is not worth one."""

    def __init__(self, label: str, total: int, stream: IO[str] | None = None) -> None:
        self.label, self.total, self.done = label, total, 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._drawn = 0.0

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.tty and time.monotonic() - self._drawn > 0.1:
            self._draw("\r")

    def _draw(self, lead: str) -> None:
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(frac * 30)
        self.stream.write(f"{lead}{self.label} [{bar:<30}] {self.done}/{self.total} rows")
        self.stream.flush()
        self._drawn = time.monotonic()

    def close(self) -> None:
        self._draw("\r" if self.tty else "")
        self.stream.write("\n")
        self.stream.flush()


def json_safe(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def from_json(value: Any, typ: pa.DataType, where: str) -> Any:
    """A JSON value back to what pyarrow expects for `typ` (timestamps, binary, nesting)."""
    if value is None:
        return None
    if pa.types.is_timestamp(typ):
        if not isinstance(value, str):
            raise ValueError(f"{where} must be an ISO 8601 time string")
        return parse_time(value, field=where)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise ValueError(f"{where} must be base64 text") from None
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        if not isinstance(value, list):
            raise ValueError(f"{where} must be a list")
        return [from_json(v, typ.value_type, where) for v in value]
    if pa.types.is_struct(typ):
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be an object")
        return {f.name: from_json(value.get(f.name), f.type, where) for f in typ}
    return value


def export_tenant(
    lake: Lake, tenant: str, out: IO[bytes], *, progress: bool = True
) -> dict[str, int]:
    """Write every table of the tenant's newest snapshot; returns rows written per table."""
    snap = lake.snapshot(check_tenant(tenant))
    load_features()
    names = sorted(snap.manifest.tables, key=lambda n: (n != "episodes", n))
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


def _parse_line(raw: bytes, lineno: int, dim: int) -> tuple[str, dict[str, Any]]:
    where = f"line {lineno}"
    hint = 'Each line must be {"table": ..., "row": {...}} as `memlake export` writes it.'
    if len(raw) > MAX_LINE_BYTES:
        raise InvalidArgument(f"{where} is over {MAX_LINE_BYTES} bytes", hint=hint)
    try:
        item = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InvalidArgument(f"{where} is not valid JSON", hint=hint) from None
    if not isinstance(item, dict) or set(item) != {"table", "row"}:
        raise InvalidArgument(f"{where} needs exactly the keys 'table' and 'row'", hint=hint)
    table, row = item["table"], item["row"]
    if not isinstance(table, str) or table not in TABLES:
        known = ", ".join(sorted(TABLES))
        raise InvalidArgument(f"{where}: unknown table {str(table)[:60]!r}", hint=f"Known: {known}")
    if not isinstance(row, dict):
        raise InvalidArgument(f"{where}: row must be an object", hint=hint)
    try:
        check_id(row.get("id"), field=f"{where}: row.id")
    except InvalidArgument as e:
        raise InvalidArgument(e.message, hint=e.hint) from None
    schema = TABLES[table].schema(dim)
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
    return table, converted


_Item = tuple[int, str, dict[str, Any]]  # (line number, table, row)
_ARROW_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError)


def _normalise(table: str, items: list[_Item], dim: int) -> list[dict[str, Any]]:
    """Rows as pyarrow reads them back (so they compare equal to stored rows)."""
    schema = TABLES[table].schema(dim)
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


def _batches(path: Path, dim: int, size: int) -> Iterator[list[_Item]]:
    batch: list[_Item] = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            batch.append((lineno, *_parse_line(raw, lineno, dim)))
            if len(batch) >= size:
                yield batch
                batch = []
    if batch:
        yield batch


def _normalised(batch: list[_Item], dim: int) -> list[tuple[str, dict[str, Any]]]:
    by_table: dict[str, list[_Item]] = {}
    for item in batch:
        by_table.setdefault(item[1], []).append(item)
    out: list[tuple[str, dict[str, Any]]] = []
    for table, items in by_table.items():
        out.extend((table, r) for r in _normalise(table, items, dim))
    return out


def import_tenant(
    lake: Lake, tenant: str, path: Path, *, batch_size: int = 500, progress: bool = True
) -> ImportReport:
    check_tenant(tenant)
    if not 1 <= batch_size <= 10_000:
        raise InvalidArgument("batch size must be 1-10000")
    load_features()
    total = 0
    for batch in _batches(path, lake.dim, batch_size):  # pass 1: check everything
        _normalised(batch, lake.dim)
        total += len(batch)
    report = ImportReport(rows=total)
    bar = Progress(f"import {tenant}", total)
    for batch in _batches(path, lake.dim, batch_size):  # pass 2: commit
        rows = _normalised(batch, lake.dim)

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
            bar.update(len(rows))
    if progress:
        bar.close()
    return report
