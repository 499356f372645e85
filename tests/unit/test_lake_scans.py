"""TableView.scan finds the same live rows as filtering the table's live rows, through updates,
deletes, re-creation and compaction."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from memlake.lake import Lake, Transaction, snapshot
from memlake.lake.compaction import compact
from memlake.layers.tables import LINKS
from memlake.store.local import LocalStore
from tests.support.counting import CountingStore
from tests.wiring import bare_lake


def expected(lake: Lake, values: list[str]) -> dict[str, dict]:
    live = lake.snapshot("t").table(LINKS).live_table()
    mask = pc.is_in(live.column("episode_id"), value_set=pa.array(values, pa.string()))
    return {r["id"]: r for r in live.filter(mask).to_pylist()}


def test_scan_matches_the_live_table(tmp_path: Path) -> None:
    lake, rng = bare_lake(LocalStore(tmp_path)), random.Random(3)
    episodes = [f"e{i}" for i in range(6)]
    for step in range(60):

        def change(txn: Transaction, step: int = step) -> None:
            for _ in range(rng.randint(1, 4)):
                rid = f"l{rng.randint(0, 15)}"
                if rng.random() < 0.3:
                    txn.delete(LINKS, rid)
                else:
                    row = {"id": rid, "concept_id": "c", "episode_id": rng.choice(episodes)}
                    txn.put(LINKS, {**row, "position": step, "created_at": datetime.now(UTC)})

        lake.commit("t", change)
        if step % 20 == 19:
            compact(lake, "t", min_segments=2)
        for values in ([episodes[step % 6]], episodes[:3], ["nobody"]):
            view = lake.snapshot("t").table(LINKS)
            assert view.scan("episode_id", values) == expected(lake, values), (step, values)


def test_find_and_rows_agree_with_the_index(tmp_path: Path) -> None:
    """find (no index, newest segment first) and rows (index) resolve every id as get does."""
    lake, rng = bare_lake(LocalStore(tmp_path)), random.Random(5)
    ids = [f"l{i}" for i in range(12)]
    for step in range(40):

        def change(txn: Transaction, step: int = step) -> None:
            for _ in range(rng.randint(1, 3)):
                rid = rng.choice(ids)
                if rng.random() < 0.3:
                    txn.delete(LINKS, rid)
                else:
                    row = {"id": rid, "concept_id": "c", "episode_id": f"e{step}"}
                    txn.put(LINKS, {**row, "position": step, "created_at": datetime.now(UTC)})

        lake.commit("t", change)
        if step % 15 == 14:
            compact(lake, "t", min_segments=2)
        view = lake.snapshot("t").table(LINKS)
        for rid in [*ids, "nobody"]:
            found, loc = view.find(rid), view.locate(rid)
            assert (found[0] if found else None) == loc, (step, rid)
            assert (found[1] if found and loc and loc.is_live else None) == view.get(rid)
        live = [rid for rid in reversed(ids) if view.get(rid) is not None]
        assert view.rows([*reversed(ids), "nobody"]) == [view.get(rid) for rid in live]
        assert all("_seq" not in r and "_deleted" not in r for r in view.rows(ids))


def test_lookup_without_the_index_reads_only_segments_that_may_hold_the_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold search wants its ten hits: lookup must not read every segment for the id index,
    and must resolve updated, deleted and missing ids as get does. Then the index is built in
    the background, and lookups (of this snapshot and the next) go through it."""
    monkeypatch.setattr(snapshot, "INDEX_AFTER_LOOKUP", False)
    store = CountingStore(LocalStore(tmp_path))
    lake = bare_lake(store)
    for batch in range(8):  # one segment of 5 ids each, in id order (as ULIDs are)

        def add(txn: Transaction, batch: int = batch) -> None:
            for i in range(5):
                row = {"id": f"l{batch}{i}", "concept_id": "c", "episode_id": f"e{batch}"}
                txn.put(LINKS, {**row, "position": batch, "created_at": datetime.now(UTC)})

        lake.commit("t", add)

    def change(txn: Transaction) -> None:
        txn.delete(LINKS, "l21")
        row = {"id": "l22", "concept_id": "c", "episode_id": "moved"}
        txn.put(LINKS, {**row, "position": 99, "created_at": datetime.now(UTC)})

    lake.commit("t", change)
    wanted = ["l20", "l21", "l22", "l71", "l99"]
    cold = bare_lake(store).snapshot("t").table(LINKS)  # a new process: nothing decoded
    store.reset()
    got = cold.lookup(wanted)
    view = lake.snapshot("t").table(LINKS)
    assert got == {rid: view.get(rid) for rid in wanted}
    assert got["l21"] is None and got["l99"] is None and got["l22"]["episode_id"] == "moved"
    # the segments of l2x, of l7x and of the change, of the 9 segments
    assert store.counts["get"] == 3 and len(view.segments) == 9
    assert cold._index is None  # not built on the way
    # the same rows as Arrow, cold and through the index: one row each, the columns asked
    columns = ["episode_id", "position"]
    for table in (bare_lake(store).snapshot("t").table(LINKS), view):
        arrow = table.lookup_arrow(wanted, columns)
        assert {rid: None if t is None else t.to_pylist() for rid, t in arrow.items()} == {
            rid: None if row is None else [{c: row[c] for c in columns}] for rid, row in got.items()
        }

    monkeypatch.setattr(snapshot, "INDEX_AFTER_LOOKUP", True)
    cold_lake = bare_lake(store)
    view = cold_lake.snapshot("t").table(LINKS)
    assert view.lookup(wanted) == got
    view.wait_index()
    assert view._index is not None and store.counts["get"] > 3  # every segment, once
    store.reset()
    assert view.lookup(wanted) == got and not store.counts["get"]  # through the index

    def touch(txn: Transaction) -> None:
        row = {"id": "l75", "concept_id": "c", "episode_id": "new"}
        txn.put(LINKS, {**row, "position": 100, "created_at": datetime.now(UTC)})

    cold_lake.commit("t", touch)
    newer = cold_lake.snapshot("t").table(LINKS)
    assert newer.lookup(["l75", "l22"]) == {"l75": newer.get("l75"), "l22": got["l22"]}
    assert newer._index is not None  # extended the previous view's index
