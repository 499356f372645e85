"""The episodes schema no longer has the never-written `embedding` column (decision 1146): a
lake whose segments still carry it keeps reading, writing, compacting and exporting, and a file
exported with it still imports."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from memlake import episodes
from memlake.lake import Lake, Transaction
from memlake.lake.compaction import compact
from memlake.lake.schema import TableSpec
from memlake.store.local import LocalStore
from memlake.transfer import export_tenant, import_tenant
from tests.wiring import CATALOG, bare_lake

T0 = datetime(2026, 1, 15, 9, 30, tzinfo=UTC)


def old_schema(dim: int) -> pa.Schema:
    """The episodes schema before decision 1146: `embedding` just before the system columns."""
    new = episodes.TABLE_SPEC.schema(dim)
    field = pa.field("embedding", pa.list_(pa.float32(), dim))
    return new.insert(new.get_field_index("_deleted"), field)


def episode(rid: str, content: str) -> dict[str, object]:
    return {"id": rid, "content": content, "context": "c", "created_at": T0, "entity_ids": []}


def write_old_segments(root: Path) -> str:
    """Two commits written by a release that still had the column; returns a segment key."""
    old = TableSpec(episodes.TABLE, old_schema, episodes.TABLE_SPEC.stat_columns)
    lake = Lake(LocalStore(root), tables={**CATALOG, episodes.TABLE: old})

    def first(txn: Transaction) -> None:
        txn.put(episodes.TABLE, {**episode("e1", "one"), "embedding": [0.5] * lake.dim})
        txn.put(episodes.TABLE, {**episode("e2", "two"), "embedding": None})

    lake.commit("t", first)
    lake.commit("t", lambda txn: txn.put(episodes.TABLE, episode("e3", "three")))
    return lake.snapshot("t").manifest.segments(episodes.TABLE)[0].key


def test_segments_with_the_old_column_still_read(tmp_path: Path) -> None:
    key = write_old_segments(tmp_path)
    assert "embedding" in pq.read_schema(tmp_path / key).names  # the stored file has it
    lake = bare_lake(LocalStore(tmp_path))  # a new process: nothing cached
    view = lake.snapshot("t").table(episodes.TABLE)
    row = view.get("e1")
    assert row is not None and "embedding" not in row and row["content"] == "one"
    assert view.live_table().column_names == [
        f.name for f in episodes.TABLE_SPEC.schema(lake.dim) if not f.name.startswith("_")
    ]
    assert [r["id"] for r in view.rows(["e3", "e2"])] == ["e3", "e2"]
    # new writes land next to the old segments, and compaction merges both kinds
    lake.commit("t", lambda txn: txn.put(episodes.TABLE, episode("e4", "four")))
    lake.commit("t", lambda txn: txn.delete(episodes.TABLE, "e2"))
    assert compact(lake, "t", min_segments=2).merged[episodes.TABLE] == 4
    view = lake.snapshot("t").table(episodes.TABLE)
    assert sorted(view.ids()) == ["e1", "e3", "e4"] and view.segments[0].compacted
    assert "embedding" not in pq.read_schema(tmp_path / view.segments[0].key).names


def test_export_of_an_old_lake_round_trips(tmp_path: Path) -> None:
    write_old_segments(tmp_path / "src")
    src = bare_lake(LocalStore(tmp_path / "src"))
    path = tmp_path / "t.jsonl"
    with path.open("wb") as out:
        export_tenant(src, "t", out, progress=False)
    rows = [json.loads(line)["row"] for line in path.read_text().splitlines()]
    assert len(rows) == 3 and all("embedding" not in r for r in rows)
    dst = bare_lake(LocalStore(tmp_path / "dst"))
    assert import_tenant(dst, "t", path, progress=False).written == 3
    for rid in ("e1", "e2", "e3"):
        got = dst.snapshot("t").table(episodes.TABLE).get(rid)
        assert got == src.snapshot("t").table(episodes.TABLE).get(rid)


def test_a_file_exported_with_the_column_still_imports(tmp_path: Path) -> None:
    """Exports of earlier releases carry "embedding": null on every episode line."""
    lines = [
        {"id": "a", "content": "x", "created_at": "2026-01-01T00:00:00Z", "embedding": None},
        {"id": "b", "content": "y", "created_at": "2026-01-01T00:00:00Z", "embedding": [0.1]},
    ]
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps({"table": "episodes", "row": r}) + "\n" for r in lines))
    lake = bare_lake(LocalStore(tmp_path / "lake"))
    report = import_tenant(lake, "t", path, progress=False)
    assert (report.rows, report.written) == (2, 2)
    got = lake.snapshot("t").table(episodes.TABLE).get("b")
    assert got is not None and got["content"] == "y" and "embedding" not in got
    assert import_tenant(lake, "t", path, progress=False).written == 0  # same rows: idempotent
