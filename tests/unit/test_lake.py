"""The commit engine on the local store: versions, latest-wins, tombstones, races, crashes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from memlake.errors import Conflict, NotFound
from memlake.lake import Lake, Transaction, head_copy, keys
from memlake.lake.commit_state import Hooks
from memlake.lake.compaction import compact
from memlake.lake.gc import collect_garbage
from memlake.store.local import LocalStore
from tests.support.counting import CountingStore
from tests.wiring import bare_lake


def put(lake: Lake, tenant: str, row_id: str, content: str) -> int:
    def change(txn: Transaction) -> int:
        txn.put("episodes", {"id": row_id, "content": content, "created_at": datetime.now(UTC)})
        return txn.snapshot.version + 1

    return lake.commit(tenant, change)


def test_latest_version_wins_and_tombstones_hide_rows(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    put(lake, "t", "a", "one")
    put(lake, "t", "b", "bee")
    put(lake, "t", "a", "two")
    view = lake.snapshot("t").table("episodes")
    assert view.get("a")["content"] == "two"
    assert view.count() == 2
    lake.commit("t", lambda txn: txn.delete("episodes", "a"))
    view = lake.snapshot("t").table("episodes")
    assert view.get("a") is None and view.count() == 1
    # another process (a fresh Lake on the same directory) sees the same state
    other = bare_lake(LocalStore(tmp_path)).snapshot("t").table("episodes")
    assert other.get("a") is None and other.get("b")["content"] == "bee"


def test_point_in_time_reads_see_older_versions(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    v1 = put(lake, "t", "a", "one")
    put(lake, "t", "a", "two")
    assert lake.snapshot("t", version=v1).table("episodes").get("a")["content"] == "one"
    with pytest.raises(NotFound):
        lake.snapshot("t", version=99)


def test_a_rejected_change_commits_nothing_and_others_in_the_batch_still_commit(
    tmp_path: Path,
) -> None:
    lake = bare_lake(LocalStore(tmp_path))

    def bad(txn: Transaction) -> None:
        txn.put("episodes", {"id": "x", "content": "half"})
        raise Conflict("no")

    with pytest.raises(Conflict):
        lake.commit("t", bad)
    assert lake.snapshot("t").version == 0
    put(lake, "t", "y", "fine")
    assert lake.snapshot("t").table("episodes").get("x") is None


def test_losing_a_race_re_runs_the_change_against_the_winner(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    first, second = bare_lake(store), bare_lake(store)
    put(first, "t", "a", "one")
    second.snapshot("t")  # second caches version 1
    put(first, "t", "b", "two")  # first moves to version 2 behind second's back
    seen: list[int] = []

    def change(txn: Transaction) -> None:
        seen.append(txn.snapshot.version)
        txn.put("episodes", {"id": "c", "content": "three"})

    second.commit("t", change)
    snap = second.snapshot("t")
    assert snap.version == 3 and snap.table("episodes").count() == 3
    assert seen[-1] == 2  # validated against the newest state


def test_crash_between_segment_and_manifest_leaves_nothing_visible(tmp_path: Path) -> None:
    class Crash(Exception):
        pass

    def crash(tenant: str, version: int) -> None:
        raise Crash("power cut")

    lake = bare_lake(LocalStore(tmp_path))
    put(lake, "t", "kept", "acknowledged")
    lake.hooks = Hooks(before_manifest_put=crash)
    with pytest.raises(Crash):
        put(lake, "t", "lost", "never acknowledged")
    fresh = bare_lake(LocalStore(tmp_path)).snapshot("t")
    assert fresh.version == 1
    assert fresh.table("episodes").get("kept")["content"] == "acknowledged"
    assert fresh.table("episodes").get("lost") is None
    # the orphan segment is garbage: GC removes it once the grace period has passed
    later = datetime.now(UTC) + timedelta(hours=1)
    report = collect_garbage(bare_lake(LocalStore(tmp_path)), "t", now=later)
    assert report.deleted_objects == 1
    assert bare_lake(LocalStore(tmp_path)).snapshot("t").table("episodes").count() == 1


def test_reader_finds_latest_without_hint_and_warm_read_costs_one_request(tmp_path: Path) -> None:
    store = CountingStore(LocalStore(tmp_path))
    lake = bare_lake(store)
    for i in range(20):
        put(lake, "t", f"r{i}", "x")
    lake.settle_hint("t")  # the last hint's put ends (a write does not wait for it)
    store.inner.delete(keys.hint_key("t"))
    store.inner.delete(head_copy.head_key("t"))
    cold = bare_lake(LocalStore(tmp_path))
    assert cold.snapshot("t").version == 20
    store.reset()
    lake.snapshot("t").table("episodes").get("r3")
    assert sum(store.counts.values()) == 1  # one existence probe of version 21
    store.reset()
    put(lake, "t", "new", "y")
    lake.settle_hint("t")
    assert store.writes == 4  # segment, the manifest and its copy, then the hint


def test_compaction_merges_keeps_latest_and_drops_dead_rows(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    for i in range(40):
        put(lake, "t", f"r{i % 10}", f"v{i}")
    lake.commit("t", lambda txn: txn.delete("episodes", "r0"))
    before = {r: lake.snapshot("t").table("episodes").get(r) for r in (f"r{i}" for i in range(10))}
    report = compact(lake, "t", min_segments=4)
    snap = lake.snapshot("t")
    assert len(snap.manifest.segments("episodes")) == 1
    assert report.rows_written == 9  # 10 ids, one deleted
    after = {r: snap.table("episodes").get(r) for r in before}
    assert after == before
    assert (
        bare_lake(LocalStore(tmp_path)).snapshot("t").table("episodes").get("r5")["content"]
        == "v35"
    )


def test_compaction_aborts_when_its_input_changed(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    lake = bare_lake(store)
    for i in range(10):
        put(lake, "t", f"r{i}", "x")
    compact(bare_lake(store), "t", min_segments=4)  # someone else compacted first
    put(lake, "t", "late", "y")
    report = compact(lake, "t", min_segments=4, target_rows=4096)
    assert lake.snapshot("t").table("episodes").count() == 11
    assert report.version is None or lake.snapshot("t").table("episodes").count() == 11


def test_parquet_is_readable_by_duckdb_as_it_is(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    for i in range(5):
        put(lake, "t", f"r{i}", f"content {i}")
    put(lake, "t", "r1", "updated")
    lake.commit("t", lambda txn: txn.delete("episodes", "r2"))
    keys_ = [s.key for s in lake.snapshot("t").manifest.segments("episodes")]
    files = [str(tmp_path / k) for k in keys_]
    con = duckdb.connect()
    described = con.execute(f"DESCRIBE SELECT * FROM read_parquet({files!r})").fetchall()
    schema = {row[0]: row[1] for row in described}
    assert schema["created_at"] == "TIMESTAMP WITH TIME ZONE"
    assert schema["entity_ids"] == "VARCHAR[]"
    live = con.execute(
        f"""
        SELECT id, content FROM (
          SELECT *, row_number() OVER (PARTITION BY id ORDER BY _seq DESC) AS rn
          FROM read_parquet({files!r}))
        WHERE rn = 1 AND NOT _deleted ORDER BY id
        """
    ).fetchall()
    assert live == [
        ("r0", "content 0"),
        ("r1", "updated"),
        ("r3", "content 3"),
        ("r4", "content 4"),
    ]


def test_an_index_built_once_is_reused_after_commits_to_other_tables(tmp_path: Path) -> None:
    store = CountingStore(LocalStore(tmp_path))
    lake = bare_lake(store)
    for i in range(30):
        put(lake, "t", f"r{i}", "x")
    assert lake.snapshot("t").table("episodes").count() == 30  # index built
    lake.cache.max_bytes = 0  # nothing cached: every segment read would show as a GET
    lake.cache.add("evict", lake.snapshot("t").table("episodes").live_table())
    for _ in range(3):  # commits that touch only another table
        lake.commit("t", lambda txn: txn.extra.update(n=txn.snapshot.version))
    store.reset()
    assert lake.snapshot("t").table("episodes").count() == 30
    assert store.counts["get"] == 0  # no segment re-read to rebuild the index
