"""The CLI as an operator meets it: one-line errors (no traceback) and readable maintenance
reports (`memlake compact` / `memlake gc`, `--json` for scripts)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memlake.store.local import LocalStore
from tests.wiring import bare_lake

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 1, 15, 9, 30, tzinfo=UTC)


def memlake(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("MEMLAKE_")}
    full.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "memlake", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=ROOT,
        timeout=120,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("memlake: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_serve_on_a_port_in_use(tmp_path: Path) -> None:
    # GIVEN a port something else listens on
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        # WHEN memlake serve is started on it
        proc = memlake("serve", "--port", str(port), "--data", str(tmp_path / "lake"))
    # THEN one line says so, exit 2
    assert_one_line_error(proc, 2, f"port {port} is already in use", "--port")


def test_serve_on_a_host_that_is_not_ours(tmp_path: Path) -> None:
    proc = memlake(
        "serve", "--host", "203.0.113.7", "--port", "0", "--data", str(tmp_path / "lake"),
        env={"MEMLAKE_API_KEYS": "tok-x:alpha"},
    )  # fmt: skip
    assert_one_line_error(proc, 2, "203.0.113.7 is not an address of this machine")


@pytest.mark.parametrize("command", ["serve", "compact", "gc", "import"])
def test_a_data_dir_under_a_file(tmp_path: Path, command: str) -> None:
    (tmp_path / "afile").write_text("not a directory")
    data = str(tmp_path / "afile" / "lake")
    extra = ["--port", "0"] if command == "serve" else ["--tenant", "t"]
    if command == "import":
        extra.append(str(tmp_path / "afile"))
    proc = memlake(command, *extra, "--data", data)
    assert_one_line_error(proc, 2, "data directory", data)


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs Linux sysfs")
def test_serve_on_a_data_dir_it_cannot_write() -> None:
    # /sys/kernel exists and refuses new files even to root (chmod would not stop root)
    proc = memlake("serve", "--port", "0", "--data", "/sys/kernel")
    assert_one_line_error(proc, 2, "cannot use data directory /sys/kernel")


@pytest.mark.parametrize("command", ["compact", "gc", "export"])
def test_maintenance_of_a_missing_lake_creates_nothing(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "typo"
    proc = memlake(command, "--tenant", "t", "--data", str(missing))
    assert_one_line_error(proc, 2, f"no lake at {missing}")
    assert not missing.exists()


@pytest.mark.parametrize("command", ["compact", "gc", "export"])
def test_unknown_tenant(tmp_path: Path, command: str) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    lake.commit("team", lambda txn: txn.put("episodes", _episode(0)))
    proc = memlake(command, "--tenant", "nobody", "--data", str(tmp_path))
    assert_one_line_error(proc, 1, "tenant nobody has no data in this lake")


def _episode(i: int) -> dict[str, Any]:
    return {"id": f"ep-{i}", "content": f"episode {i}", "created_at": T0}


def _age(root: Path, seconds: float) -> None:
    then = time.time() - seconds
    for path in root.rglob("*"):
        os.utime(path, (then, then))


def test_compact_and_gc_print_a_summary_and_json(tmp_path: Path) -> None:
    # GIVEN a tenant with five one-row segments and one update (a row the merge drops)
    lake = bare_lake(LocalStore(tmp_path))
    for i in range(5):
        lake.commit("team", lambda txn, i=i: txn.put("episodes", _episode(i)))
    lake.commit("team", lambda txn: txn.put("episodes", {**_episode(0), "content": "v2"}))

    # WHEN it is compacted
    human = memlake("compact", "--tenant", "team", "--data", str(tmp_path))
    # THEN one readable line, no Python repr
    assert human.returncode == 0, human.stderr
    assert human.stdout == (
        "tenant team: compacted 1 table into version 7; segments merged: episodes 6;"
        " 5 rows written, 1 dropped\n"
    )
    again = memlake("compact", "--tenant", "team", "--data", str(tmp_path), "--json")
    assert json.loads(again.stdout) == {
        "tenant": "team",
        "version": None,
        "merged": {},
        "rows_written": 0,
        "rows_dropped": 0,
    }
    nothing = memlake("compact", "--tenant", "team", "--data", str(tmp_path))
    assert nothing.stdout.startswith("tenant team: nothing to compact"), nothing.stdout

    # WHEN gc runs once the old versions are past the history it keeps (7 days)
    _age(tmp_path, 8 * 86400)
    gc = memlake("gc", "--tenant", "team", "--data", str(tmp_path), "--json")
    report = json.loads(gc.stdout)
    assert report["tenant"] == "team", report
    assert (report["deleted_objects"], report["deleted_manifests"]) == (6, 6), report
    assert set(report) == {
        "tenant",
        "deleted_objects",
        "deleted_manifests",
        "kept_objects",
        "deleted_temp_files",
        "failed_deletes",
    }
    human_gc = memlake("gc", "--tenant", "team", "--data", str(tmp_path))
    assert human_gc.returncode == 0, human_gc.stderr
    assert human_gc.stdout == (
        "tenant team: deleted 0 unreferenced objects, 0 old manifests and 0 temporary files;"
        " kept 1 object\n"  # the one compacted segment
    )
    assert "Report(" not in human.stdout + human_gc.stdout


def test_maintain_runs_the_scheduled_pass_over_every_tenant(tmp_path: Path) -> None:
    # GIVEN two tenants with nine one-row segments each (the scheduled pass merges runs of 8)
    lake = bare_lake(LocalStore(tmp_path))
    for tenant in ("alpha", "beta"):
        for i in range(9):
            lake.commit(tenant, lambda txn, i=i: txn.put("episodes", _episode(i)))
    # WHEN `memlake maintain` runs, as the scheduled maintenance function would
    human = memlake("maintain", "--data", str(tmp_path))
    # THEN one sentence covers both tenants, and both were compacted
    assert human.returncode == 0, human.stderr
    assert human.stdout == (
        "2 tenants: compacted 2 tables, embedded 0 passages (0 pending), deleted 0"
        " unreferenced objects and 0 old manifests\n"
    )
    for tenant in ("alpha", "beta"):
        manifest = bare_lake(LocalStore(tmp_path)).snapshot(tenant).manifest
        assert len(manifest.segments("episodes")) == 1
    one = memlake("maintain", "--data", str(tmp_path), "--tenant", "alpha", "--json")
    assert json.loads(one.stdout)["tenants"] == 1 and json.loads(one.stdout)["failed"] == []
    missing = memlake("maintain", "--data", str(tmp_path), "--tenant", "nobody")
    assert_one_line_error(missing, 1, "nobody")
