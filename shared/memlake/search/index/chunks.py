"""The `episode_chunks` table: one row per episode with its passages' offsets and the vectors
of those embedded so far (fixed_size_list<float32, dim>, readable by DuckDB/Athena like every
table). Written by the commit hooks (memlake.search.indexing) and the deferred pass
(memlake.search.backfill); read by searches that show a hit's best passage."""

from __future__ import annotations

import pyarrow as pa

from memlake.lake.schema import SYSTEM_FIELDS, TableSpec
from memlake.lake.txn import Transaction

CHUNKS_TABLE = "episode_chunks"


def _chunks_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),  # the episode id
            pa.field("model", pa.string()),
            pa.field("content_hash", pa.string()),
            pa.field("starts", pa.list_(pa.int32())),  # -1: the title/summary/tags text
            pa.field("ends", pa.list_(pa.int32())),
            pa.field("vectors", pa.list_(pa.list_(pa.float32(), dim))),  # the first k passages
            *SYSTEM_FIELDS,
        ]
    )


CHUNKS_SPEC = TableSpec(CHUNKS_TABLE, _chunks_schema)


def drop_chunks(txn: Transaction, episode_id: str) -> None:
    # unconditional: an existence check would read every chunk segment in a cold process, and
    # a tombstone for an id that has no vectors is harmless
    txn.delete(CHUNKS_TABLE, episode_id)
