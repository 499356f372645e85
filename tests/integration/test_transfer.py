"""`memlake export` / `memlake import`: JSON Lines round trips between a local lake and S3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest
from moto import mock_aws

from memlake.errors import InvalidArgument
from memlake.lake import Lake
from memlake.lake.schema import SYSTEM_FIELDS, TableSpec, catalog
from memlake.store.base import ObjectStore
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store
from memlake.stored_rows import StoredRow
from memlake.transfer import export_tenant, import_tenant
from tests.wiring import CATALOG

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 1, 15, 9, 30, 0, 123456, tzinfo=UTC)


def _notes(dim: int) -> pa.Schema:
    return pa.schema(
        [pa.field("id", pa.string(), nullable=False), pa.field("text", pa.string()), *SYSTEM_FIELDS]
    )


class NoteRow(StoredRow):
    text: str


#: A further table, as later features add them (with the model import checks its rows by):
#: export must not need to know it. The lakes of this file are built with it.
NOTES = TableSpec("zz_notes", _notes, row_model=NoteRow)
WITH_NOTES = catalog([*CATALOG.values(), NOTES])


def notes_lake(store: ObjectStore) -> Lake:
    return Lake(store, tables=WITH_NOTES)


@pytest.fixture
def notes_table() -> str:
    return NOTES.name


def seed(lake: Lake, tenant: str) -> None:
    def change(txn: Any) -> None:
        txn.put(
            "episodes",
            {
                "id": "01KF0QZ3M5T8N2K4M6P9R1S3VW",
                "content": 'Mañana: deploy 🚀 with "quotes"\nand lines',
                "summary": "deploy",
                "context": "memlake",
                "metadata": json.dumps({"session": "s1", "n": 3}),
                "entity_ids": ["concept-a", "concept-b"],
                "created_at": T0,
                "updated_at": T0,
                "started_at": T0,
            },
        )
        txn.put("episodes", {"id": "gone", "content": "deleted later", "created_at": T0})
        for i in range(5):
            txn.put("episodes", {"id": f"ep-{i}", "content": f"episode {i}", "created_at": T0})

    lake.commit(tenant, change)
    lake.commit(tenant, lambda txn: txn.delete("episodes", "gone"))


def export_lines(lake: Lake, tenant: str, tmp: Path) -> list[dict[str, Any]]:
    path = tmp / f"{tenant}-{os.urandom(4).hex()}.jsonl"
    with path.open("wb") as out:
        export_tenant(lake, tenant, out, progress=False)
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def s3_lake() -> Iterator[Lake]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="memlake-transfer")
        yield notes_lake(S3Store("memlake-transfer", client=client))


def test_local_to_s3_and_back(tmp_path: Path, s3_lake: Lake, notes_table: str) -> None:
    # GIVEN a local lake with episodes (one deleted) and a row in another table
    local = notes_lake(LocalStore(tmp_path / "local"))
    seed(local, "team")
    local.commit("team", lambda txn: txn.put(notes_table, {"id": "n1", "text": "note"}))
    # WHEN it is exported and imported into S3
    lines = export_lines(local, "team", tmp_path)
    path = tmp_path / "team.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = import_tenant(s3_lake, "copy", path, batch_size=3, progress=False)
    # THEN every live row of every table made it, with exact values
    assert [ln["table"] for ln in lines].count("episodes") == 6
    assert {"table": notes_table, "row": {"id": "n1", "text": "note"}} in lines
    assert all(set(ln) == {"table", "row"} for ln in lines)
    assert "gone" not in {ln["row"]["id"] for ln in lines}
    first = next(ln["row"] for ln in lines if ln["row"]["id"].startswith("01KF"))
    assert first["created_at"] == "2026-01-15T09:30:00.123456Z"
    assert "embedding" not in first  # dropped, never written (decision 1146)
    assert report.rows == 7 and report.written == 7 and report.commits == 3
    snap = s3_lake.snapshot("copy")
    got = snap.table("episodes").get("01KF0QZ3M5T8N2K4M6P9R1S3VW")
    want = local.snapshot("team").table("episodes").get("01KF0QZ3M5T8N2K4M6P9R1S3VW")
    assert got == want
    assert sorted(export_lines(s3_lake, "copy", tmp_path), key=str) == sorted(lines, key=str)


def test_reimport_is_idempotent(tmp_path: Path, s3_lake: Lake) -> None:
    local = notes_lake(LocalStore(tmp_path / "local"))
    seed(local, "team")
    path = tmp_path / "team.jsonl"
    with path.open("wb") as out:
        export_tenant(local, "team", out, progress=False)
    import_tenant(s3_lake, "copy", path, progress=False)
    version = s3_lake.snapshot("copy").version
    # WHEN the same file is imported again
    again = import_tenant(s3_lake, "copy", path, progress=False)
    # THEN nothing is written: same ids, same values, same manifest version
    assert (again.written, again.unchanged, again.commits) == (0, 6, 0)
    assert s3_lake.snapshot("copy").version == version


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("not json", "line 2 is not valid JSON"),
        ('{"table": "episodes"}', "exactly the keys"),
        ('{"table": "nope", "row": {"id": "a"}}', "unknown table"),
        ('{"table": "episodes", "row": {"id": "../../etc"}}', "not a valid id"),
        ('{"table": "episodes", "row": {"content": "no id"}}', "row.id"),
        ('{"table": "episodes", "row": {"id": "a", "colour": "red"}}', "unknown columns"),
        ('{"table": "episodes", "row": {"id": "a", "_deleted": true}}', "unknown columns"),
        ('{"table": "episodes", "row": {"id": "a", "created_at": "yesterday"}}', "ISO 8601"),
        ('{"table": "episodes", "row": {"id": "a", "entity_ids": "x"}}', "must be a list"),
        (
            '{"table": "episode_chunks", "row": {"id": "a", "model": "m", "content_hash": "'
            + "0" * 64
            + '", "starts": [0], "ends": [1], "vectors": [[1, 2]]}}',
            "line 2: the row does not fit",
        ),
        ('{"table": "episodes", "row": {"id": "a", "content": 5}}', "content: Input should be"),
    ],
)
def test_a_bad_line_writes_nothing(tmp_path: Path, line: str, needle: str) -> None:
    lake = notes_lake(LocalStore(tmp_path / "lake"))
    path = tmp_path / "bad.jsonl"
    good = (
        '{"table": "episodes", "row": {"id": "ok", "content": "fine",'
        ' "created_at": "2026-01-01T00:00:00Z"}}'
    )
    path.write_text(f"{good}\n{line}\n")
    with pytest.raises(InvalidArgument) as err:
        import_tenant(lake, "t", path, progress=False)
    assert needle in err.value.message
    assert lake.snapshot("t").version == 0


def _cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "MEMLAKE_STORE": "local"}
    env.pop("MEMLAKE_BUCKET", None)
    return subprocess.run(
        [sys.executable, "-m", "memlake", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def test_cli_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "src"
    seed(notes_lake(LocalStore(src)), "team")
    out = _cli("export", "--tenant", "team", "--data", str(src))
    assert out.returncode == 0, out.stderr
    assert b"export team" in out.stderr and b"6/6 rows" in out.stderr
    assert len(out.stdout.splitlines()) == 6
    dump = tmp_path / "dump.jsonl"
    dump.write_bytes(out.stdout)
    dst = tmp_path / "dst"
    first = _cli("import", str(dump), "--tenant", "copy", "--data", str(dst))
    assert first.returncode == 0, first.stderr
    assert b"6 written" in first.stderr
    again = _cli("import", "-", "--tenant", "copy", "--data", str(dst), stdin=out.stdout)
    assert b"0 written, 6 unchanged" in again.stderr, again.stderr
    bad = _cli("import", "-", "--tenant", "copy", "--data", str(dst), stdin=b"{}\n")
    assert bad.returncode == 2 and b"line 1" in bad.stderr
    assert _cli("export", "--tenant", "../x", "--data", str(src)).returncode == 2


def test_an_imported_tenant_is_searchable(tmp_path: Path) -> None:
    """Derived objects (search shards) are not exported: the features rebuild them on import."""
    from memlake.config import Settings
    from memlake.context import Principal, ToolContext
    from memlake.services import Services
    from memlake.tools.registry import TOOL_NAMES, get_tool

    if "search_episodes" not in TOOL_NAMES:
        pytest.skip("no search tool registered")

    def run(services: Services, tool: str, **args: Any) -> dict[str, Any]:
        spec = get_tool(tool)
        assert spec is not None
        ctx = ToolContext(Principal("t"), services)
        return spec.run(ctx, spec.input_model.model_validate(args)).model_dump(mode="json")  # type: ignore[no-any-return]

    src = Services.build(Settings(store="local", data_dir=tmp_path / "src"))
    for text in ("zebra migration across the savanna", "deploy failed", "parquet lake design"):
        run(src, "add_episode", content=text)
    dump = tmp_path / "t.jsonl"
    with dump.open("wb") as out:
        export_tenant(src.lake, "t", out, progress=False)
    dst = Services.build(Settings(store="local", data_dir=tmp_path / "dst"))
    import_tenant(dst.lake, "t", dump, progress=False)
    want = run(src, "search_episodes", query="zebra")["episodes"][0]["id"]
    assert run(dst, "search_episodes", query="zebra")["episodes"][0]["id"] == want
