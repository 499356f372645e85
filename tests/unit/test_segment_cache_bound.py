"""The segment cache is bounded by the memory its tables hold, not by their buffers' bytes
alone (issue 47's soak): every write adds a one-row segment that reports ~400 bytes and holds
~25-35 KB, so a cache of 256 MiB counting the 400 grew without bound in practice. A commit
also lets go of the segments it replaced (compaction's inputs)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from memlake.episodes import TABLE_SPEC
from memlake.lake import Transaction
from memlake.lake.compaction import compact
from memlake.lake.schema import rows_to_table
from memlake.lake.segments import SegmentCache, held_bytes
from memlake.layers.tables import LINKS
from memlake.store.local import LocalStore
from tests.wiring import bare_lake


def _one_row_episode() -> pa.Table:
    now = datetime.now(UTC)
    row = {"id": "01J" + "X" * 23, "content": "harbour tide", "created_at": now}
    return rows_to_table([row], TABLE_SPEC.schema())


def test_a_small_table_is_charged_its_fixed_overhead() -> None:
    table = _one_row_episode()
    assert table.nbytes < 1_000
    assert held_bytes(table) >= 20_000  # measured 23-34 KB resident (segments.py)


def test_many_one_row_segments_stay_within_the_bound() -> None:
    cache = SegmentCache(max_bytes=1 << 20)
    for i in range(1_000):  # by nbytes alone (~420 KB) all 1,000 would be kept
        cache.add(f"tenants/t/tables/episodes/{i}.parquet", _one_row_episode())
    assert cache.nbytes <= 1 << 20
    assert len(cache._items) < 60
    assert cache.nbytes == sum(held for _, held in cache._items.values())


def _link(txn: Transaction, rid: str) -> None:
    row = {"id": rid, "concept_id": "c", "episode_id": "e", "position": 0}
    txn.put(LINKS, {**row, "created_at": datetime.now(UTC)})


def test_compaction_lets_go_of_the_segments_it_replaced(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    for i in range(8):  # a commit each: a segment each, cached as written
        lake.commit("t", lambda txn, i=i: _link(txn, f"r{i}"))
    written = {s.key for s in lake.snapshot("t").manifest.segments(LINKS)}
    assert written <= set(lake.cache._items)
    compact(lake, "t", min_segments=2)
    live = lake.snapshot("t").manifest.segment_keys()
    assert not written & live  # compacted into a new segment
    assert not written & set(lake.cache._items)
    assert lake.cache.nbytes == sum(held for _, held in lake.cache._items.values())
    rows = lake.snapshot("t").table(LINKS)
    assert all(rows.get(f"r{i}") is not None for i in range(8))  # read back from the new one
