"""Snapshot.derived: what a snapshot's readers derive from it (a search's parsed shard layout)
is made once while the snapshot is held, and anew for the snapshot of the next commit."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memlake.lake import Transaction
from memlake.layers.tables import LINKS
from memlake.store.local import LocalStore
from tests.wiring import bare_lake


def _put(txn: Transaction, rid: str) -> None:
    row = {"id": rid, "concept_id": "c", "episode_id": "e", "position": 0}
    txn.put(LINKS, {**row, "created_at": datetime.now(UTC)})
    txn.extra["seen"] = [*txn.extra.get("seen", []), rid]


def test_made_once_a_snapshot_and_again_after_a_commit(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    lake.commit("t", lambda txn: _put(txn, "a"))
    made: list[list[str]] = []

    def seen() -> list[str]:
        made.append(list(lake.snapshot("t").extra["seen"]))
        return made[-1]

    first = lake.snapshot("t")
    assert first.derived("seen", seen) == ["a"]
    assert lake.snapshot("t").derived("seen", seen) is first.derived("seen", seen)
    assert len(made) == 1  # the same snapshot: made once
    assert first.derived("other", lambda: 7) == 7  # each key its own
    lake.commit("t", lambda txn: _put(txn, "b"))
    assert lake.snapshot("t").derived("seen", seen) == ["a", "b"]
    assert first.derived("seen", seen) == ["a"]  # an older snapshot keeps its own
    assert len(made) == 2
