"""A segment is read once however many threads ask for it together (SegmentCache), and a
search's likely hits are read ahead (TableView.read_ahead) without ever raising from the
background: the lookup that needs a segment reads it again and raises there (decision 4401)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlake.errors import StorageError
from memlake.lake import Transaction
from memlake.layers.tables import LINKS
from memlake.store.faults import Fault, FaultyStore
from memlake.store.latency import LatencyModel, LatencyStore
from memlake.store.local import LocalStore
from tests.wiring import bare_lake


def _link(txn: Transaction, rid: str) -> None:
    row = {"id": rid, "concept_id": "c", "episode_id": "e", "position": 0}
    txn.put(LINKS, {**row, "created_at": datetime.now(UTC)})


def _three_segments(root: Path) -> None:
    lake = bare_lake(LocalStore(root))
    for rid in ("a", "b", "c"):  # a commit each: a segment each
        lake.commit("t", lambda txn, rid=rid: _link(txn, rid))


def test_threads_asking_for_one_segment_together_read_it_once(tmp_path: Path) -> None:
    _three_segments(tmp_path)
    store = LatencyStore(LocalStore(tmp_path), LatencyModel(first_byte=0.05))
    view = bare_lake(store).snapshot("t").table(LINKS)
    store.reset()
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(view.segment_table(0))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.stats.counts["get"] == 1
    assert len(got) == 6 and all(table is got[0] for table in got)


def test_a_failed_read_fails_its_waiters_and_is_not_kept(tmp_path: Path) -> None:
    _three_segments(tmp_path)
    store = FaultyStore(LocalStore(tmp_path), [Fault("get", "/tables/", times=1)])
    view = bare_lake(store).snapshot("t").table(LINKS)
    with pytest.raises(StorageError, match="injected"):
        view.segment_table(0)
    assert view.segment_table(0).num_rows == 1  # read again, not the error kept


def test_read_ahead_reads_the_hits_segments_once_and_in_the_background(tmp_path: Path) -> None:
    _three_segments(tmp_path)
    store = LatencyStore(LocalStore(tmp_path), LatencyModel(first_byte=0.05), trace=True)
    view = bare_lake(store).snapshot("t").table(LINKS)
    store.reset()
    view.read_ahead(["a", "c", "nobody"])  # returns at once: the reads run on the I/O pool
    rows = view.lookup(["a", "c"])
    assert {rid: row["id"] for rid, row in rows.items() if row} == {"a": "a", "c": "c"}
    gets = [r.key for r in store.trace if r.op == "get"]
    assert len(gets) == len(set(gets)) == 2  # the two segments, each once
    assert store.stats.depth == 1  # the lookup waited for the reads ahead, not after them
    view.read_ahead(["a", "c"])  # held: nothing more is read
    assert store.stats.counts["get"] == 2


def test_a_read_ahead_that_fails_raises_nothing_and_the_lookup_reads_again(
    tmp_path: Path,
) -> None:
    _three_segments(tmp_path)
    store = FaultyStore(LocalStore(tmp_path), [Fault("get", "/tables/", times=1)])
    view = bare_lake(store).snapshot("t").table(LINKS)
    view.read_ahead(["b"])
    deadline = time.monotonic() + 10
    while not store.fired and time.monotonic() < deadline:  # the read ahead took the fault
        time.sleep(0.001)
    rows = view.lookup(["b"])
    assert store.fired == {("get", "before"): 1}
    assert rows["b"] is not None and rows["b"]["id"] == "b"
