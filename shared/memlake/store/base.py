"""The ObjectStore protocol the lake is written against.

Keys are '/'-separated relative paths built by memlake.lake.keys from validated parts only.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from memlake.errors import StorageError


class ObjectNotFound(StorageError):
    code = "object_not_found"
    retryable = False

    def __init__(self, message: str, *, hint: str = "", key: str = "") -> None:
        super().__init__(message, hint=hint)
        self.key = key  # the missing object's key ("" when the store did not say)


class PreconditionFailed(StorageError):
    """A conditional write lost: the key already exists (S3 412, or 409 on a concurrent put)."""

    code = "precondition_failed"


class RangeNotSatisfiable(StorageError):
    """A ranged read starts at or past the object's end (S3 answers 416 InvalidRange)."""

    code = "range_not_satisfiable"
    retryable = False


def check_range(start: int, end: int) -> None:
    """A ranged read's bounds: [start, end) with 0 <= start < end (a caller's bug otherwise)."""
    if start < 0 or end <= start:
        raise ValueError(f"invalid byte range [{start}, {end}): need 0 <= start < end")


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    last_modified: datetime


class ObjectStore(Protocol):
    def get(self, key: str) -> bytes:
        """The object's bytes; raises ObjectNotFound."""

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of the object (end exclusive), clipped at its end as S3 clips.

        Raises ValueError unless 0 <= start < end, ObjectNotFound for a missing key and
        RangeNotSatisfiable when start is at or past the end (an empty object has no bytes to
        return, so every range of it is unsatisfiable, as on S3)."""

    def size(self, key: str) -> int:
        """The object's length in bytes (one HEAD on S3); raises ObjectNotFound."""

    def exists(self, key: str) -> bool: ...

    def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        """Write an object. With if_absent, raise PreconditionFailed when the key exists.

        A put is atomic: readers see the whole object or none of it.
        """

    def delete(self, key: str) -> None:
        """Remove an object; removing a missing key is not an error."""

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Objects under a prefix. Only maintenance (GC, export) lists; the read path never does."""

    def list_prefixes(self, prefix: str) -> builtins.list[str]:
        """The names of the folders directly under `prefix` (a folder key ending in "/")
        that hold at least one object, sorted; each name is one path segment, never with a
        "/". Maintenance finds the tenants with it (one S3 page per 1000 folders)."""
