"""Explicit Parquet schemas for every table, and schema-tolerant reading.

Every table has `id` plus two system columns: `_deleted` (tombstones) and `_seq` (the commit
version of a row, filled in by compaction; rows of a fresh segment take the segment's seq from
the manifest). Columns added by later releases read as null from older segments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")
DEFAULT_DIM = 384

SYSTEM_FIELDS = [pa.field("_deleted", pa.bool_(), nullable=False), pa.field("_seq", pa.int64())]


@dataclass(frozen=True)
class TableSpec:
    name: str
    schema_for_dim: Callable[[int], pa.Schema]
    #: columns whose min/max/distinct values the manifest keeps per segment, for pruning
    stat_columns: tuple[str, ...] = field(default=())
    #: rows this mask selects become tombstones when compacted (expired idempotency keys)
    expired: Callable[[pa.Table], pa.Array] | None = None
    #: the pydantic model `memlake import` checks each row by (memlake.stored_rows); a table
    #: without one cannot be imported
    row_model: type[Any] | None = None
    #: derived state the server rebuilds from other tables (the search's vector backlog):
    #: export leaves it out and import refuses it
    derived: bool = False

    def schema(self, dim: int = DEFAULT_DIM) -> pa.Schema:
        return self.schema_for_dim(dim)


#: What a Lake knows of its tables: name -> spec (assembled from the features by
#: memlake.services; a Lake has exactly the tables it was given).
Catalog = Mapping[str, TableSpec]


def catalog(specs: Iterable[TableSpec]) -> Catalog:
    out: dict[str, TableSpec] = {}
    for spec in specs:
        if spec.name in out:
            raise ValueError(f"table {spec.name!r} is defined twice")
        out[spec.name] = spec
    return MappingProxyType(out)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Cast a table read from an older or newer segment to the current schema."""
    if table.schema.equals(schema, check_metadata=False):
        return table
    columns = []
    for fld in schema:
        if fld.name in table.column_names:
            col = table.column(fld.name)
            columns.append(col if col.type == fld.type else col.cast(fld.type))
        else:
            columns.append(pa.nulls(table.num_rows, fld.type))
    return pa.Table.from_arrays(columns, schema=schema)


def rows_to_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    filled = []
    for row in rows:
        item = {f.name: row.get(f.name) for f in schema}
        item["_deleted"] = bool(row.get("_deleted", False))
        filled.append(item)
    return pa.Table.from_pylist(filled, schema=schema)
