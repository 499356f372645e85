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


class PreconditionFailed(StorageError):
    """A conditional write lost: the key already exists (S3 412, or 409 on a concurrent put)."""

    code = "precondition_failed"


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    last_modified: datetime


class ObjectStore(Protocol):
    def get(self, key: str) -> bytes:
        """The object's bytes; raises ObjectNotFound."""

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
