"""A store wrapper that counts requests per operation and the bytes read (benchmarks and
request-budget tests): `counts["get"]`, `counts["get_range"]`, ... and `bytes_read`, the bytes
every get and get_range returned."""

from __future__ import annotations

import builtins
import threading
from collections import Counter
from collections.abc import Iterator

from memlake.store.base import ObjectInfo, ObjectStore


class CountingStore:
    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.counts: Counter[str] = Counter()
        self.bytes_read = 0
        self._lock = threading.Lock()

    def _count(self, op: str) -> None:
        with self._lock:
            self.counts[op] += 1

    def _read(self, data: bytes) -> bytes:
        with self._lock:
            self.bytes_read += len(data)
        return data

    def reset(self) -> Counter[str]:
        """The counts so far (zeroed here, with bytes_read)."""
        with self._lock:
            old, self.counts = self.counts, Counter()
            self.bytes_read = 0
        return old

    @property
    def writes(self) -> int:
        return self.counts["put"] + self.counts["delete"]

    def get(self, key: str) -> bytes:
        self._count("get")  # a request counts whether or not it finds the object
        return self._read(self.inner.get(key))

    def get_range(self, key: str, start: int, end: int) -> bytes:
        self._count("get_range")
        return self._read(self.inner.get_range(key, start, end))

    def size(self, key: str) -> int:
        self._count("head")
        return self.inner.size(key)

    def exists(self, key: str) -> bool:
        self._count("head")
        return self.inner.exists(key)

    def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        self._count("put")
        self.inner.put(key, data, if_absent=if_absent)

    def delete(self, key: str) -> None:
        self._count("delete")
        self.inner.delete(key)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        self._count("list")
        return self.inner.list(prefix)

    def list_prefixes(self, prefix: str) -> builtins.list[str]:
        self._count("list")
        return self.inner.list_prefixes(prefix)


class RecordingStore(CountingStore):
    """Counts requests and remembers which keys were read (whole gets)."""

    def __init__(self, inner: ObjectStore) -> None:
        super().__init__(inner)
        self.keys_read: list[str] = []

    def get(self, key: str) -> bytes:
        self.keys_read.append(key)
        return super().get(key)
