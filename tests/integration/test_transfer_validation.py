"""`memlake import` refuses a row no tool could have written, in every table (issue 10, defect 9).

A real tenant is built with the tools (so every table has rows) and exported; one row of one
table is then broken, and the import must name that line and leave no object at all in the
lake, local or S3 (moto). The CLI says the same in one line; export of an unknown tenant exits
1; an export without vectors imports and is searchable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.errors import InvalidArgument
from memlake.lake import Lake
from memlake.services import Services
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store
from memlake.tools.registry import get_tool
from memlake.transfer import export_tenant, import_tenant
from tests.wiring import CATALOG, bare_lake

ROOT = Path(__file__).resolve().parents[2]
Row = dict[str, Any]


def _tools(services: Services, tenant: str) -> Callable[..., dict[str, Any]]:
    ctx = ToolContext(Principal(tenant), services)

    def tool(tool_name: str, /, **args: Any) -> dict[str, Any]:
        spec = get_tool(tool_name)
        assert spec is not None, tool_name
        out = spec.run(ctx, spec.input_model.model_validate(args))
        return out.model_dump(mode="json")  # type: ignore[no-any-return]

    return tool


def build_tenant(data: Path, tenant: str = "src") -> Services:
    """A tenant with rows in every table, written by the tools."""
    services = Services.build(Settings(store="local", data_dir=data), LocalStore(data))
    tool = _tools(services, tenant)
    parent = tool("upsert_concept", name="Storage")["concept"]["id"]
    child = tool("upsert_concept", name="Parquet", kind="technology", parent_id=parent)
    child_id = child["concept"]["id"]
    a = tool(
        "add_episode",
        content="We moved the lake to Parquet files",
        context="memlake",
        idempotency_key="retry-key-0001",
    )["id"]
    b = tool("add_episode", content="Compaction merges small segments", entity_ids=[child_id])
    tool(
        "add_episode_relationship",
        from_episode_id=a,
        to_episode_id=b["id"],
        relationship_type="causes",
    )
    thread = tool("add_thread", title="chat", messages=[{"role": "user", "content": "hi"}])
    tool("upsert_episode", events="## 09:00 chat", source_thread_id=thread["id"], tags=["t"])
    tool("link_episode_to_concept", episode_id=a, concept_id=parent, confidence=0.5)
    return services


@pytest.fixture(scope="module")
def export_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("src")
    services = build_tenant(data)
    path = data.parent / "src.jsonl"
    with path.open("wb") as out:
        export_tenant(services.lake, "src", out, progress=False)
    return path


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_table_has_a_row_model_and_the_export_covers_them(export_file: Path) -> None:
    assert [name for name, spec in CATALOG.items() if spec.row_model is None] == []
    exported = {name for name, spec in CATALOG.items() if not spec.derived}
    assert {line["table"] for line in lines_of(export_file)} == exported


# (table, how to break its first row, what the error names)
POISON: list[tuple[str, Callable[[Row], Row], str]] = [
    ("episodes", lambda r: {"id": "x"}, "content: Field required"),
    ("episodes", lambda r: {**r, "created_at": None}, "created_at"),
    ("episodes", lambda r: {k: v for k, v in r.items() if k != "content"}, "content"),
    ("episodes", lambda r: {**r, "content": " \n"}, "content is empty"),
    ("episodes", lambda r: {**r, "content": "x" * (256 * 1024 + 1)}, "the limit is"),
    (
        "episodes",
        lambda r: {**r, "started_at": "2026-02-02T00:00:00Z", "ended_at": "2026-01-01T00:00:00Z"},
        "started_at is after ended_at",
    ),
    ("episodes", lambda r: {**r, "metadata": "[1, 2]"}, "metadata: must be JSON object"),
    ("episodes", lambda r: {**r, "metadata": "{"}, "metadata: must be JSON object"),
    ("episodes", lambda r: {**r, "context": "a\nb"}, "context"),
    ("episodes", lambda r: {**r, "tags": ["t"] * 33}, "tags"),
    ("episodes", lambda r: {**r, "entity_ids": ["a/b"]}, "entity_ids"),
    ("episodes", lambda r: {**r, "timezone": "Mars/Base"}, "timezone"),
    ("episodes", lambda r: {**r, "revision": 0}, "revision"),
    ("episodes", lambda r: {**r, "summary": "s" * 4001}, "summary"),
    ("episode_chunks", lambda r: {**r, "starts": r["starts"] + [0]}, "same length"),
    ("episode_chunks", lambda r: {**r, "vectors": r["vectors"] * 2}, "no more vectors"),
    ("episode_chunks", lambda r: {**r, "content_hash": "zz"}, "content_hash"),
    ("threads", lambda r: {**r, "processing_status": "done"}, "processing_status"),
    ("threads", lambda r: {**r, "message_count": -1}, "message_count"),
    ("thread_messages", lambda r: {**r, "role": "robot"}, "role"),
    ("thread_messages", lambda r: {**r, "seq": r["seq"] + 1}, "id must be"),
    ("thread_messages", lambda r: {**r, "content": "   "}, "content"),
    ("concepts", lambda r: {**r, "name": None}, "name"),
    ("concepts", lambda r: {**r, "id": r["id"] + "\n"}, "not a valid id"),
    ("concept_links", lambda r: {**r, "episode_id": r["episode_id"] + "\n"}, "not a valid id"),
    ("concepts", lambda r: {**r, "parent_id": r["id"]}, "own parent"),
    ("concept_links", lambda r: {**r, "confidence": 1.5}, "confidence"),
    ("concept_links", lambda r: {**r, "episode_id": "other"}, "link_id"),
    ("relationships", lambda r: {**r, "type": "likes"}, "type"),
    ("relationships", lambda r: {**r, "strength": 2.0}, "strength"),
    ("relationships", lambda r: {**r, "to_id": r["from_id"]}, "same episode"),
    ("audit", lambda r: {**r, "action": "nuke"}, "action"),
    ("audit", lambda r: {**r, "details": "not json"}, "details"),
    ("idempotency_keys", lambda r: {**r, "key": "other-key-0002"}, "record_id"),
    ("idempotency_keys", lambda r: {**r, "result": "[]"}, "JSON object"),
    ("idempotency_keys", lambda r: {**r, "expires_at": r["created_at"]}, "expires_at"),
]


@pytest.fixture
def lake_of(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Lake]]:
    """An empty lake on a local directory or on moto S3, and how to list every object in it."""
    if request.param == "local":
        yield lambda: bare_lake(LocalStore(tmp_path / "dst"))
        return
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="memlake-import")
        yield lambda: bare_lake(S3Store("memlake-import", client=client))


@pytest.mark.parametrize("lake_of", ["local", "s3"], indirect=True)
@pytest.mark.parametrize(("table", "poison", "needle"), POISON)
def test_a_poisoned_row_is_refused_by_line_and_writes_nothing(
    export_file: Path,
    lake_of: Callable[[], Lake],
    tmp_path: Path,
    table: str,
    poison: Callable[[Row], Row],
    needle: str,
) -> None:
    lines = lines_of(export_file)
    at = next(n for n, line in enumerate(lines) if line["table"] == table)
    lines[at]["row"] = poison(lines[at]["row"])
    path = tmp_path / "poisoned.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    lake = lake_of()
    with pytest.raises(InvalidArgument) as err:
        import_tenant(lake, "dst", path, batch_size=2, progress=False)
    assert err.value.message.startswith(f"line {at + 1}: "), err.value.message
    assert needle in err.value.message, err.value.message
    assert err.value.hint
    assert list(lake.store.list("")) == []  # nothing half-written, not even a manifest


def test_the_unbroken_export_imports(export_file: Path, tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path / "dst"))
    report = import_tenant(lake, "dst", export_file, batch_size=2, progress=False)
    assert report.rows == len(lines_of(export_file)) == report.written


def memlake(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "memlake", *args, "--data", str(data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=ROOT,
    )


def test_cli_import_names_the_line_and_writes_nothing(export_file: Path, tmp_path: Path) -> None:
    lines = lines_of(export_file)
    lines.insert(1, {"table": "episodes", "row": {"id": "x"}})  # the row of the issue
    path = tmp_path / "poisoned.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = memlake("import", str(path), "--tenant", "dst", data=tmp_path / "lake")
    assert done.returncode == 2
    assert done.stderr.startswith("memlake: line 2: not a valid episodes row"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not [p for p in (tmp_path / "lake").rglob("*") if p.is_file()]


def test_cli_export_of_an_unknown_tenant_exits_1(export_file: Path, tmp_path: Path) -> None:
    data = tmp_path / "lake"
    import_tenant(bare_lake(LocalStore(data)), "known", export_file, progress=False)
    out = tmp_path / "out.jsonl"
    done = memlake("export", "--tenant", "nobody", "-o", str(out), data=data)
    assert done.returncode == 1, done
    assert done.stderr == "memlake: tenant nobody has no data in this lake\n"
    assert not out.exists()  # no empty file left behind
    to_stdout = memlake("export", "--tenant", "nobody", data=data)
    assert (to_stdout.returncode, to_stdout.stdout) == (1, "")


@pytest.mark.slow
def test_no_vectors_round_trip_is_searchable(tmp_path: Path) -> None:
    src = tmp_path / "src"
    build_tenant(src, "team")
    full, slim = tmp_path / "full.jsonl", tmp_path / "slim.jsonl"
    assert memlake("export", "--tenant", "team", "-o", str(full), data=src).returncode == 0
    done = memlake("export", "--tenant", "team", "-o", str(slim), "--no-vectors", data=src)
    assert done.returncode == 0, done.stderr
    slim_lines = lines_of(slim)
    assert "episode_chunks" not in {line["table"] for line in slim_lines}
    assert all("embedding" not in line["row"] for line in slim_lines)
    assert slim.stat().st_size * 5 < full.stat().st_size  # vectors are most of an export
    # WHEN the slim file is imported (CLI, with the lake's write hooks)
    dst = tmp_path / "dst"
    done = memlake("import", str(slim), "--tenant", "team", data=dst)
    assert done.returncode == 0, done.stderr
    # THEN the episodes got vectors again and search finds them by meaning as before
    services = Services.build(Settings(store="local", data_dir=dst), LocalStore(dst))
    snap = services.lake.snapshot("team")
    episodes = snap.table("episodes").live_table().column("id").to_pylist()
    chunks = snap.table("episode_chunks").live_table().column("id").to_pylist()
    assert sorted(chunks) == sorted(episodes) and len(episodes) == 3
    hits = _tools(services, "team")("search_episodes", query="columnar storage format")
    top = hits["episodes"][0]
    assert "Parquet" in top["content"] and top["breakdown"]["vector_rank"] == 1
    again = memlake("import", str(full), "--tenant", "team", data=dst)  # vectors equal: no write
    assert again.returncode == 0 and " 0 written" in again.stderr, again.stderr
