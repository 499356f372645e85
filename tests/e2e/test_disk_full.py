"""`memlake serve` on a data directory that fills up, then goes read-only, for real: a 2 MiB
tmpfs mounted for the test (root only; skipped, with the reason, in an unprivileged container).

A model calling add_episode gets a tool error it can act on (storage_full, retryable, "free
space"; then storage_read_only, "make it writable"), not a 500 or a traceback; the failed call
publishes no manifest version and leaves no temporary file; once space returns, or the mount is
writable again, the same tenant takes writes and finds them. tests/unit/test_local_store_faults.py
covers every step of a put, one fault at a time, without root."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import API_KEYS, TOKENS
from .mcp_helpers import call, connect, run, serve_subprocess

TOKEN = TOKENS["alpha"]


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs, unmounted afterwards whatever happened (the server is stopped first: it
    runs inside the test)."""
    if sys.platform != "linux":
        pytest.skip("mounts a tmpfs: Linux only")
    if os.geteuid() != 0:
        pytest.skip("mounts a tmpfs: needs root (run as root, or in a privileged container)")
    mnt = tmp_path / "fs"
    mnt.mkdir()
    mounted = _mount("-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", str(mnt))
    if mounted.returncode != 0:
        pytest.skip(f"mount -t tmpfs is not permitted here: {mounted.stderr.strip()}")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], check=True)


def fill(path: Path) -> None:
    """Write `path` until the file system refuses another byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    block = b"\0" * 4096
    try:
        while True:
            os.write(fd, block)
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)


def manifest_versions(lake: Path) -> list[str]:
    return sorted(p.name for p in lake.glob("tenants/*/manifest/0*.json"))


def temp_files(lake: Path) -> list[Path]:
    return list(lake.rglob(".tmp-*"))


async def add(client: Any, content: str) -> dict[str, Any]:
    return await call(client, "add_episode", {"content": content, "context": "disk"})


async def found(client: Any, episode_id: str, query: str) -> None:
    listed = await call(client, "list_episodes", {"context": "disk"})
    assert episode_id in [e["id"] for e in listed["episodes"]], listed
    hits = await call(client, "search_episodes", {"query": query, "context": "disk"})
    assert not hits["is_error"], hits
    assert episode_id in [h["id"] for h in hits["episodes"]], hits


def refused(out: dict[str, Any], code: str, hint: str) -> None:
    assert out["is_error"], out
    error = out["error"]
    assert error["code"] == code, error
    assert hint in error["hint"] and "nothing was written" in error["hint"], error
    assert "Traceback" not in error["message"] and "/fs/" not in error["message"], error


def test_a_full_then_read_only_data_directory(small_fs: Path) -> None:
    lake = small_fs / "lake"
    lake.mkdir()
    filler = small_fs / "filler"
    with serve_subprocess(lake, {"MEMLAKE_API_KEYS": API_KEYS}) as url:

        async def scenario() -> None:
            async with connect(url, TOKEN) as client:
                first = await add(client, "The lake was set up on a small disk.")
                assert not first["is_error"], first
                versions = manifest_versions(lake)
                assert versions

                fill(filler)
                out = await add(client, "Written while the disk was full.")
                refused(out, "storage_full", "free space")
                assert out["error"]["retryable"] is True
                assert manifest_versions(lake) == versions  # no half-committed version
                assert not temp_files(lake)

                filler.unlink()  # space returns: the same tenant takes writes again
                back = await add(client, "Written after the operator freed space on the disk.")
                assert not back["is_error"], back
                await found(client, back["id"], "operator freed space")
                versions = manifest_versions(lake)

                assert _mount("-o", "remount,ro", str(small_fs)).returncode == 0
                try:
                    out = await add(client, "Written while the disk was read-only.")
                    refused(out, "storage_read_only", "make it writable")
                    assert "retryable" not in out["error"]
                    assert manifest_versions(lake) == versions
                    await found(client, back["id"], "operator freed space")  # reads still work
                finally:
                    assert _mount("-o", "remount,rw", str(small_fs)).returncode == 0
                assert not temp_files(lake)
                again = await add(client, "Written once the mount was writable again.")
                assert not again["is_error"], again
                await found(client, again["id"], "mount writable again")

        run(scenario())
