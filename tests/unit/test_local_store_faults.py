"""A full or read-only data directory, simulated by making one step of LocalStore.put fail: the
caller gets StorageFull / StorageReadOnly / StorageError naming the key (never a raw OSError
or a host path), no `.tmp-*` file stays behind, a commit publishes no manifest, and the next
write after the fault succeeds. tests/e2e/test_disk_full.py does it on a real tmpfs."""

from __future__ import annotations

import errno
import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memlake.context import Principal
from memlake.errors import StorageError, StorageFull, StorageReadOnly
from memlake.lake import Lake
from memlake.mcp.dispatch import call_tool
from memlake.store.local import LocalStore
from tests.wiring import bare_lake, tool_context

KEY = "tenants/t/objects/x.bin"
STEPS = ["mkdir", "mkstemp", "write", "flush", "fsync", "link", "replace"]
#: errno -> (the error type, its code, retryable)
FAULTS: dict[int, tuple[type[StorageError], str, bool]] = {
    errno.ENOSPC: (StorageFull, "storage_full", True),
    errno.EDQUOT: (StorageFull, "storage_full", True),
    errno.EFBIG: (StorageFull, "storage_full", True),
    errno.EROFS: (StorageReadOnly, "storage_read_only", False),
    errno.EACCES: (StorageReadOnly, "storage_read_only", False),
    errno.EPERM: (StorageReadOnly, "storage_read_only", False),
    errno.EIO: (StorageError, "storage_error", True),
}


def oserror(code: int, path: object = "/host/secret/data") -> OSError:
    """The OSError the kernel gives, carrying a host path as the real one does."""
    return OSError(code, os.strerror(code), str(path))


class _FailingFile:
    """The file put writes through, failing at write or flush."""

    def __init__(self, fh: Any, step: str, err: OSError) -> None:
        self._fh, self._step, self._err = fh, step, err

    def __enter__(self) -> _FailingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()

    def fileno(self) -> int:
        return int(self._fh.fileno())

    def write(self, data: bytes) -> int:
        if self._step == "write":
            self._fh.write(data[: len(data) // 2])  # half of it reached the disk
            raise self._err
        return int(self._fh.write(data))

    def flush(self) -> None:
        if self._step == "flush":
            raise self._err
        self._fh.flush()


def inject(monkeypatch: pytest.MonkeyPatch, step: str, err: OSError, only: str = "") -> list[str]:
    """Make `step` of every later put fail with err (only for targets containing `only`).
    Returns the steps that failed, so a test can tell the fault was reached."""
    hits: list[str] = []

    def failing(real: Any, target_arg: int) -> Any:
        def fn(*args: Any, **kw: Any) -> Any:
            target = str(args[target_arg]) if len(args) > target_arg else str(kw.get("dir"))
            if only in target:
                hits.append(step)
                raise err
            return real(*args, **kw)

        return fn

    if step == "mkdir":
        monkeypatch.setattr(Path, "mkdir", failing(Path.mkdir, 0))
    elif step == "mkstemp":
        monkeypatch.setattr(tempfile, "mkstemp", failing(tempfile.mkstemp, 99))
    elif step in ("write", "flush"):
        real_fdopen = os.fdopen

        def fdopen(fd: int, *args: Any, **kw: Any) -> Any:
            hits.append(step)
            return _FailingFile(real_fdopen(fd, *args, **kw), step, err)

        monkeypatch.setattr(os, "fdopen", fdopen)
    elif step == "fsync":
        monkeypatch.setattr(os, "fsync", failing(os.fsync, 99))
    elif step == "link":
        monkeypatch.setattr(os, "link", failing(os.link, 1))
    elif step == "replace":
        monkeypatch.setattr(os, "replace", failing(os.replace, 1))
    return hits


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob(".tmp-*")]


@pytest.mark.parametrize("code", list(FAULTS), ids=[errno.errorcode[c] for c in FAULTS])
@pytest.mark.parametrize("step", STEPS)
def test_a_failed_put_says_what_to_do_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, code: int
) -> None:
    store = LocalStore(tmp_path)
    hits = inject(monkeypatch, step, oserror(code, tmp_path / "tenants"))
    kind, expected_code, retryable = FAULTS[code]
    with pytest.raises(StorageError) as caught:
        store.put(KEY, b"payload " * 1000, if_absent=step == "link")
    monkeypatch.undo()
    assert hits, f"the fault at {step} was never reached"
    err = caught.value
    assert type(err) is kind
    assert (err.code, err.retryable) == (expected_code, retryable)
    assert KEY in err.message
    assert str(tmp_path) not in err.message and "/host/" not in err.message
    assert os.strerror(code) in err.message
    if kind is not StorageError:
        assert "nothing was written" in err.hint and "retry" in err.hint
    assert not temp_files(tmp_path)
    assert not store.exists(KEY)
    store.put(KEY, b"after")  # the fault has passed: the same put works
    assert store.get(KEY) == b"after"


def test_the_wire_shape_of_both_errors() -> None:
    full = StorageFull("could not write k: No space left on device").to_dict()
    assert full["code"] == "storage_full" and full["retryable"] is True
    assert "free space" in str(full["hint"])
    read_only = StorageReadOnly("could not write k: Read-only file system").to_dict()
    assert read_only["code"] == "storage_read_only" and "retryable" not in read_only
    assert "writable" in str(read_only["hint"])


def test_a_failed_cleanup_does_not_hide_the_real_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file system went read-only between writing and fsync: the unlink of the temporary
    file fails too, and the caller still hears about the first failure; gc removes the leftover
    once the directory is writable again."""
    store = LocalStore(tmp_path)
    inject(monkeypatch, "fsync", oserror(errno.ENOSPC))

    def unlink(path: Any, *a: Any, **kw: Any) -> None:
        raise oserror(errno.EROFS, path)

    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.raises(StorageFull):
        store.put(KEY, b"data")
    monkeypatch.undo()
    assert len(temp_files(tmp_path)) == 1
    future = datetime.now(UTC) + timedelta(minutes=1)
    assert store.remove_stale_temp_files("tenants/", future) == 1
    assert not temp_files(tmp_path)


def test_deletes_and_temp_file_cleanup_on_a_read_only_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gc deletes objects and leftovers: on a read-only directory it gets StorageReadOnly."""
    store = LocalStore(tmp_path)
    store.put(KEY, b"x")
    leftover = tmp_path / "tenants" / "t" / ".tmp-crashed"
    leftover.write_bytes(b"half")

    def read_only(*a: Any, **kw: Any) -> None:
        raise oserror(errno.EROFS, tmp_path)

    monkeypatch.setattr(Path, "unlink", read_only)
    monkeypatch.setattr(os, "unlink", read_only)
    with pytest.raises(StorageReadOnly) as caught:
        store.delete(KEY)
    assert KEY in caught.value.message and str(tmp_path) not in caught.value.message
    with pytest.raises(StorageReadOnly) as caught:
        store.remove_stale_temp_files("tenants/", datetime.now(UTC) + timedelta(minutes=1))
    assert "tenants/t/.tmp-crashed" in caught.value.message
    monkeypatch.undo()
    store.delete(KEY)
    assert not store.exists(KEY)


def episode(lake: Lake, row_id: str) -> int:
    def change(txn: Any) -> int:
        txn.put("episodes", {"id": row_id, "content": row_id, "created_at": datetime.now(UTC)})
        return int(txn.snapshot.version) + 1

    return int(lake.commit("t", change))


def latest_version(root: Path) -> int:
    """As another process sees it: a fresh Lake on the same directory."""
    return int(bare_lake(LocalStore(root)).snapshot("t").version)


@pytest.mark.parametrize(
    ("step", "only", "code"),
    [
        ("fsync", "", errno.ENOSPC),  # the first segment cannot be written
        ("link", "/manifest/", errno.ENOSPC),  # segments written, the manifest is not
        ("mkstemp", "", errno.EROFS),
        ("link", "/manifest/", errno.EROFS),
    ],
)
def test_a_commit_into_a_full_or_read_only_directory_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, only: str, code: int
) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    assert episode(lake, "e1") == 1
    hits = inject(monkeypatch, step, oserror(code), only=only)
    kind = FAULTS[code][0]
    with pytest.raises(kind):
        episode(lake, "e2")
    monkeypatch.undo()
    assert hits
    assert lake.snapshot("t").version == 1 == latest_version(tmp_path)
    assert not temp_files(tmp_path)
    assert lake.snapshot("t").table("episodes").get("e2") is None
    assert episode(lake, "e3") == 2  # space is back: the tenant works again
    view = bare_lake(LocalStore(tmp_path)).snapshot("t").table("episodes")
    assert view.get("e3") is not None and view.get("e2") is None


def test_add_episode_on_a_full_disk_is_a_tool_error_a_model_can_act_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the one error mapping every door uses: isError with the code and hint."""
    ctx = tool_context(Principal("t"), bare_lake(LocalStore(tmp_path)))
    inject(monkeypatch, "fsync", oserror(errno.ENOSPC, tmp_path))
    outcome = call_tool({"name": "add_episode", "arguments": {"content": "hello"}}, ctx)
    monkeypatch.undo()
    wire = outcome.to_mcp()
    assert wire["isError"] is True
    text = wire["content"][0]["text"]
    assert '"storage_full"' in text and "free space" in text and str(tmp_path) not in text
    again = call_tool({"name": "add_episode", "arguments": {"content": "hello"}}, ctx)
    assert not again.is_error, again.error
