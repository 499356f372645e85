"""The lake: immutable Parquet segments per table and a per-tenant manifest log."""

import pyarrow as pa

from memlake import ARROW_POOL_CHOSEN
from memlake.lake.engine import Lake
from memlake.lake.snapshot import Snapshot
from memlake.lake.txn import Transaction

if not ARROW_POOL_CHOSEN:  # pyarrow imported before memlake keeps mimalloc (decision 4703)
    pa.set_memory_pool(pa.system_memory_pool())

__all__ = ["Lake", "Snapshot", "Transaction"]
