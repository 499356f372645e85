"""`memlake import-chats` on moto S3, after a kill -9 half-way, and with its vectors caught up
by maintenance (issue 46, decision 4601)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from memlake.config import Settings
from memlake.services import Services
from tests.integration.import_chats_helpers import (
    FIXTURES,
    TENANT,
    chatgpt_conversation,
    run_cli,
    tools,
    write_json,
)

ROOT = Path(__file__).resolve().parents[2]


def _rows(lake_dir: Path, table: str) -> int:
    cfg = Settings(store="local", data_dir=lake_dir)
    snap = Services.build(cfg).lake.snapshot(TENANT)
    return snap.table(table).live_table().num_rows


def test_import_on_s3_is_found_and_idempotent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMLAKE_STORE", "s3")
    monkeypatch.setenv("MEMLAKE_BUCKET", "memlake-import")
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="memlake-import")
        export = FIXTURES / "chatgpt_conversations.json"
        code, report = run_cli(capsys, str(export), "--tenant", "ada")
        assert code == 0 and report["imported"] == 3 and report["commits"] == 1
        code, report = run_cli(capsys, str(export), "--tenant", "ada")
        assert code == 0 and report["unchanged"] == 3 and report["commits"] == 0
        services = Services.build(Settings.from_env())
        snap = services.lake.snapshot("ada")
        assert snap.table("episodes").live_table().num_rows == 3
        assert snap.table("thread_messages").live_table().num_rows == 10


@pytest.mark.parametrize(
    ("sig", "exit_code"), [(signal.SIGKILL, -signal.SIGKILL), (signal.SIGINT, 130)]
)
def test_killed_or_interrupted_mid_import_then_resume_without_duplicates(
    tmp_path: Path, sig: signal.Signals, exit_code: int
) -> None:
    # GIVEN an export big enough to take several batches
    total = 1_500
    convs = [
        chatgpt_conversation(f"k{i}", [f"question {i} " + "word " * 200, f"answer {i}"])
        for i in range(total)
    ]
    export = write_json(tmp_path / "conversations.json", convs)
    lake = tmp_path / "lake"
    env = {**os.environ, "MEMLAKE_STORE": "local"}
    env.pop("MEMLAKE_BUCKET", None)
    argv = [sys.executable, "-m", "memlake", "import-chats", str(export), "--data", str(lake)]
    # WHEN the import is killed (kill -9) or interrupted (Ctrl-C) once it has committed a batch
    proc = subprocess.Popen([*argv, "--json"], env=env, cwd=ROOT, stdout=subprocess.PIPE)
    manifests = lake / "tenants" / TENANT / "manifest"
    deadline = time.monotonic() + 120
    try:
        while len(list(manifests.glob("0*.json"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(sig)
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()  # type: ignore[union-attr]
    assert proc.returncode == exit_code
    first = _rows(lake, "episodes")
    assert 0 < first < total and first % 100 == 0  # whole batches only
    assert _rows(lake, "threads") == first and _rows(lake, "thread_messages") == 2 * first
    # THEN a second run imports the rest and skips what the first committed
    done = subprocess.run([*argv, "--json"], env=env, cwd=ROOT, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    report = json.loads(done.stdout.decode().splitlines()[-1])
    assert (report["unchanged"], report["imported"]) == (first, total - first)
    assert _rows(lake, "episodes") == total and _rows(lake, "threads") == total
    assert _rows(lake, "thread_messages") == 2 * total


def test_vectors_follow_in_maintenance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memlake.cli import main

    conv = chatgpt_conversation("v1", ["How do octopuses camouflage?", "Chromatophores."])
    run_cli(capsys, str(write_json(tmp_path / "c.json", [conv])), "--data", str(tmp_path))
    # found by its words at once, with no vector yet: the import embeds nothing itself
    hit = tools(tmp_path)("search_episodes", query="octopuses camouflage")["episodes"][0]
    assert not hit["breakdown"].get("vector_score")
    assert main(["maintain", "--tenant", TENANT, "--data", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["passages_embedded"] >= 1 and report["passages_pending"] == 0
    hit = tools(tmp_path)("search_episodes", query="octopuses camouflage")["episodes"][0]
    assert hit["breakdown"]["vector_score"] > 0
