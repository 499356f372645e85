"""The local-directory store: atomic puts, create-exclusive, and keys that cannot escape."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from memlake.errors import InvalidArgument
from memlake.lake.gc import collect_garbage
from memlake.store.base import ObjectNotFound, PreconditionFailed
from memlake.store.local import LocalStore
from tests.wiring import bare_lake


def test_put_get_delete_list(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put("tenants/a/x.json", b"1")
    assert store.get("tenants/a/x.json") == b"1"
    assert store.exists("tenants/a/x.json")
    assert [o.key for o in store.list("tenants/a/")] == ["tenants/a/x.json"]
    store.delete("tenants/a/x.json")
    store.delete("tenants/a/x.json")  # deleting twice is fine
    with pytest.raises(ObjectNotFound):
        store.get("tenants/a/x.json")


def test_if_absent_refuses_an_existing_key_and_keeps_the_first(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put("k/v", b"first", if_absent=True)
    with pytest.raises(PreconditionFailed):
        store.put("k/v", b"second", if_absent=True)
    assert store.get("k/v") == b"first"
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp-")]


def test_exactly_one_of_many_racing_creators_wins(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    for trial in range(30):
        winners: list[int] = []
        barrier = threading.Barrier(16)

        def racer(
            i: int,
            key: str = f"race/{trial}",
            barrier: threading.Barrier = barrier,
            winners: list[int] = winners,
        ) -> None:
            barrier.wait()
            try:
                store.put(key, str(i).encode(), if_absent=True)
                winners.append(i)
            except PreconditionFailed:
                pass

        threads = [threading.Thread(target=racer, args=(i,)) for i in range(16)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert len(winners) == 1
        assert store.get(f"race/{trial}") == str(winners[0]).encode()


@pytest.mark.parametrize(
    "key",
    ["../x", "a/../../x", "/etc/passwd", "a//b", "", "a/./b", "x/.tmp-1", "a/b\0c", "a/..", "a/"],
)
def test_keys_cannot_escape_the_root(tmp_path: Path, key: str) -> None:
    store = LocalStore(tmp_path / "root")
    with pytest.raises(InvalidArgument):
        store.put(key, b"x")
    with pytest.raises(InvalidArgument):  # exists() joins the key as a string (no pathlib)
        store.exists(key)
    assert not (tmp_path / "x").exists() and not (tmp_path / "root" / "x").exists()


def test_names_like_the_refused_ones_are_objects(tmp_path: Path) -> None:
    """The key check refuses whole names only: "..b", "...", a dot file, a name that only
    contains ".tmp-", and one ending in a newline (a regex's $ would match before it)."""
    store = LocalStore(tmp_path)
    for key in ("a/..b", "a/...", "a/.b", "a/x.tmp-", "a/..\n"):
        store.put(key, key.encode())
        assert store.exists(key) and store.get(key) == key.encode()


def test_exists_finds_objects_and_not_folders(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put("tenants/t/manifest/1.json", b"{}")
    assert store.exists("tenants/t/manifest/1.json")
    assert not store.exists("tenants/t/manifest/2.json")
    assert not store.exists("tenants/t/manifest")  # a folder is not an object


def _leftover(directory: Path, name: str, age_seconds: float) -> Path:
    """A temporary file as a crashed put leaves it, last written age_seconds ago."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f".tmp-{name}"
    path.write_bytes(b"half a segment")
    at = time.time() - age_seconds
    os.utime(path, (at, at))
    return path


def test_gc_removes_stale_temp_files_and_keeps_fresh_ones(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    lake.commit("t", lambda txn: txn.put("episodes", {"id": "e1", "content": "x"}))
    segments = tmp_path / "tenants" / "t" / "segments"
    stale = _leftover(segments, "stale", age_seconds=3600)
    fresh = _leftover(segments, "fresh", age_seconds=5)
    other_tenant = _leftover(tmp_path / "tenants" / "u", "stale", age_seconds=3600)
    report = collect_garbage(lake, "t", grace_seconds=900)
    assert report.deleted_temp_files == 1
    assert not stale.exists() and fresh.exists() and other_tenant.exists()
    assert lake.snapshot("t").table("episodes").get("e1") is not None  # live data untouched


def test_gc_never_removes_a_write_in_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A put stalled longer than the grace period (its temp file looks stale) keeps its file:
    the writer holds a lock on it until it is in place, and gc skips files it cannot lock."""
    store = LocalStore(tmp_path)
    lake = bare_lake(store)
    lake.commit("t", lambda txn: txn.put("episodes", {"id": "e1", "content": "x"}))
    stalled, release = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        stalled.set()
        release.wait(10)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    writer = threading.Thread(target=store.put, args=("tenants/t/objects/slow.bin", b"data"))
    writer.start()
    assert stalled.wait(10)
    (tmp,) = (tmp_path / "tenants" / "t" / "objects").glob(".tmp-*")
    old = time.time() - 3600
    os.utime(tmp, (old, old))
    report = collect_garbage(lake, "t", grace_seconds=900)
    release.set()
    writer.join(10)
    assert report.deleted_temp_files == 0
    assert store.get("tenants/t/objects/slow.bin") == b"data"


@pytest.mark.parametrize("prefix", ["../../etc", "tenants/../..", "tenants/./x"])
def test_temp_file_cleanup_never_leaves_the_store(tmp_path: Path, prefix: str) -> None:
    from datetime import UTC, datetime

    store = LocalStore(tmp_path / "lake")
    with pytest.raises(InvalidArgument):
        store.remove_stale_temp_files(prefix, datetime.now(UTC))
