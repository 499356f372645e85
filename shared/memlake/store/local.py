"""Local-directory object store: the embedded default for `memlake serve` and tests.

Atomicity: every put writes a temporary file in the target directory, then either
os.replace()s it into place (plain put) or os.link()s it (if_absent: link fails with EEXIST
when the key exists, so create-exclusive and complete content come in one step).

A crash between the two steps leaves a `.tmp-*` file that no listing shows; `memlake gc`
removes those older than its grace period (remove_stale_temp_files). A writer holds an
exclusive flock on its temporary file until it is renamed or linked, and gc skips a file it
cannot lock, so it never removes a write in progress however slow.

Failures: an OSError while writing or deleting becomes a StorageError that names the key, never
the host path: StorageFull when the disk or quota is full (retry once space is freed),
StorageReadOnly when the directory refuses writes, a plain StorageError otherwise. A failed put
removes its temporary file, so a full disk is not made fuller and no half-written object shows.
"""

from __future__ import annotations

import builtins
import errno
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path

from memlake.errors import InvalidArgument, StorageError, StorageFull, StorageReadOnly
from memlake.store.base import (
    ObjectInfo,
    ObjectNotFound,
    PreconditionFailed,
    RangeNotSatisfiable,
    check_range,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: gc relies on the grace period alone
    fcntl = None  # type: ignore[assignment]

_TMP_PREFIX = ".tmp-"
#: a key that names no file under the root: a name empty, "." or "..", or a temporary file's,
#: or a NUL anywhere (one match: a search's manifest check reads a key after a pass over
#: memory, where each Python step of a split and a loop costs microseconds; \Z, not $, which
#: would also match before a final newline)
_BAD_KEY = re.compile(r"(?:^|/)(?:(?:\.\.?)?(?:/|\Z)|" + re.escape(_TMP_PREFIX) + r")|\x00")
#: what opening a key that is no object raises (a folder is no object either)
_NO_OBJECT = (FileNotFoundError, NotADirectoryError, IsADirectoryError)
#: errnos that mean no room: the disk, the user's quota (EDQUOT is absent on some platforms), or
#: a file-size limit
_FULL = frozenset(
    n for n in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EFBIG) if n is not None
)
#: errnos that mean the directory refuses writes: mounted read-only, or no permission to write
_READ_ONLY = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def _write_failed(op: str, key: str, e: OSError) -> StorageError:
    """The error a caller can act on for a failed write or delete. The message carries the key
    and the errno's text only: str(e) names the absolute host path, which is no caller's
    business and means nothing to a model."""
    reason = os.strerror(e.errno) if e.errno else type(e).__name__
    if e.errno in _FULL:
        return StorageFull(f"could not {op} {key}: {reason}")
    if e.errno in _READ_ONLY:
        return StorageReadOnly(f"could not {op} {key}: {reason}")
    return StorageError(f"could not {op} {key}: {reason}")


def _discard(tmp: str) -> None:
    """Remove a put's temporary file. Its failure must not hide the put's own error (on a file
    system remounted read-only the unlink fails too); what it leaves is a `.tmp-*` file that no
    listing shows and gc removes once the directory is writable again."""
    with suppress(OSError):
        os.unlink(tmp)


def _try_lock(fd: int, *, wait: bool) -> bool:
    if fcntl is None:  # pragma: no cover
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def _holds_an_object(folder: str) -> bool:
    """A folder counts when some file below it is an object (not a writer's temporary)."""
    for _dirpath, _dirs, files in os.walk(folder):
        if any(not name.startswith(_TMP_PREFIX) for name in files):
            return True
    return False


class LocalStore:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._root = str(self.root)
        self._root_slash = os.path.join(self._root, "")

    def _path(self, key: str) -> Path:
        return Path(self._file(key))

    def _file(self, key: str) -> str:
        """The object's file under the root. A key is names joined by "/", none of them empty,
        "." or "..", so the file cannot be outside the root (as a string: pathlib's joins and
        parent checks cost ~0.1 ms of a search's manifest check after a pass over memory)."""
        if _BAD_KEY.search(key) is not None:
            raise InvalidArgument(f"invalid object key {key!r}")
        return self._root_slash + key

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except _NO_OBJECT as e:
            raise ObjectNotFound(f"no object {key}", key=key) from e

    def get_range(self, key: str, start: int, end: int) -> bytes:
        check_range(start, end)
        path = self._path(key)
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if start >= size:
                    raise RangeNotSatisfiable(f"{key} has {size} bytes, range starts at {start}")
                fh.seek(start)
                return fh.read(min(end, size) - start)
        except _NO_OBJECT as e:
            raise ObjectNotFound(f"no object {key}", key=key) from e

    def size(self, key: str) -> int:
        path = self._path(key)
        try:
            if not path.is_file():
                raise FileNotFoundError(key)
            return path.stat().st_size
        except _NO_OBJECT as e:
            raise ObjectNotFound(f"no object {key}", key=key) from e

    def exists(self, key: str) -> bool:
        return os.path.isfile(self._file(key))

    def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        path = self._path(key)
        try:
            self._put(key, path, data, if_absent=if_absent)
        except OSError as e:  # from any step: mkdir, mkstemp, write, flush, fsync, link, replace
            raise _write_failed("write", key, e) from e

    @staticmethod
    def _put(key: str, path: Path, data: bytes, *, if_absent: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:  # the lock lasts until the file is in place
                _try_lock(fh.fileno(), wait=True)
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
                if if_absent:
                    try:
                        os.link(tmp, path)
                    except FileExistsError as e:
                        raise PreconditionFailed(f"{key} already exists") from e
                    except OSError as e:
                        if e.errno == errno.EEXIST:
                            raise PreconditionFailed(f"{key} already exists") from e
                        raise
                else:
                    os.replace(tmp, path)
                    tmp = ""
        finally:  # also after a failed write or fsync: a full disk gets its space back
            if tmp:
                _discard(tmp)

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as e:  # gc deletes: on a read-only directory it must say so plainly
            raise _write_failed("delete", key, e) from e

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        base = self.root
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                if name.startswith(_TMP_PREFIX):
                    continue
                full = Path(dirpath, name)
                key = full.relative_to(base).as_posix()
                if key.startswith(prefix):
                    st = full.stat()
                    yield ObjectInfo(key, st.st_size, datetime.fromtimestamp(st.st_mtime, UTC))

    def list_prefixes(self, prefix: str) -> builtins.list[str]:
        base = self._path(prefix.rstrip("/")) if prefix.strip("/") else self.root
        try:
            entries = list(os.scandir(base))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(
            e.name
            for e in entries
            if e.is_dir(follow_symlinks=False)
            and not e.name.startswith(_TMP_PREFIX)
            and _holds_an_object(e.path)
        )

    def remove_stale_temp_files(self, prefix: str, older_than: datetime) -> int:
        """Remove `.tmp-*` files under `prefix` last written before `older_than` that no writer
        holds (a crash left them); returns how many were removed."""
        base = self._path(prefix.rstrip("/")) if prefix.strip("/") else self.root
        cutoff = older_than.timestamp()
        removed = 0
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                if not name.startswith(_TMP_PREFIX):
                    continue
                try:
                    if self._remove_if_stale(dirpath, name, cutoff):
                        removed += 1
                except OSError as e:
                    key = Path(dirpath, name).relative_to(self.root).as_posix()
                    raise _write_failed("remove", key, e) from e
        return removed

    @staticmethod
    def _remove_if_stale(dirpath: str, name: str, cutoff: float) -> bool:
        path = os.path.join(dirpath, name)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:  # renamed into place meanwhile
            return False
        try:
            if os.fstat(fd).st_mtime >= cutoff or not _try_lock(fd, wait=False):
                return False  # fresh, or a write in progress
            with suppress(FileNotFoundError):
                os.unlink(path)
                return True
            return False
        finally:
            os.close(fd)
