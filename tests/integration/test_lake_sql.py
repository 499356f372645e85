"""The "newest non-deleted row per id" rule of the Athena view, run in DuckDB over a real lake
(updates, deletes, compaction, writes after compaction) and compared with the lake itself."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from memlake.lake import Lake
from memlake.lake.compaction import compact
from memlake.store.local import LocalStore
from tests.wiring import bare_lake

ROOT = Path(__file__).resolve().parents[2]
DUCKDB_SQL = (ROOT / "infra/duckdb/episodes_latest.sql").read_text()
ATHENA_SQL = (ROOT / "infra/athena/episodes.sql").read_text()


def _order_by(sql: str) -> str:
    found = re.search(r"ORDER BY (coalesce\(_seq, 0\) DESC,.*?parquet\$., 1\) DESC)", sql, re.S)
    assert found, "no version ordering found"
    return re.sub(r"\s+", " ", found.group(1)).replace('"$path"', "filename")


def test_athena_and_duckdb_use_the_same_version_rule() -> None:
    assert _order_by(ATHENA_SQL) == _order_by(DUCKDB_SQL)


def _put(lake: Lake, rid: str, content: str) -> None:
    lake.commit("t", lambda txn: txn.put("episodes", {"id": rid, "content": content}))


def test_duckdb_sees_what_the_lake_sees(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    for i in range(6):
        _put(lake, f"e{i}", f"v1 of {i}")
    _put(lake, "e1", "v2 of 1")  # an update
    lake.commit("t", lambda txn: txn.delete("episodes", "e2"))  # a delete
    assert compact(lake, "t", min_segments=2).merged  # old segments stay until GC
    _put(lake, "e3", "v2 of 3")  # newer than the compacted copy
    lake.commit("t", lambda txn: txn.delete("episodes", "e4"))
    _put(lake, "e2", "back again")  # re-added after its delete was compacted

    con = duckdb.connect()
    con.execute(f"SET VARIABLE episodes = '{tmp_path}/tenants/t/tables/episodes'")
    got = {(r[0], r[1]) for r in con.execute(DUCKDB_SQL).fetchall()}

    live = lake.snapshot("t").table("episodes").live_table()
    want = set(zip(live.column("id").to_pylist(), live.column("content").to_pylist(), strict=True))
    assert got == want
    assert ("e1", "v2 of 1") in got and ("e3", "v2 of 3") in got and ("e2", "back again") in got
    assert not any(rid == "e4" for rid, _ in got)
