"""The lake: immutable Parquet segments per table and a per-tenant manifest log."""

from memlake.lake.engine import Lake
from memlake.lake.snapshot import Snapshot
from memlake.lake.txn import Transaction

__all__ = ["Lake", "Snapshot", "Transaction"]
