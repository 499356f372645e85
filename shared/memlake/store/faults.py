"""A store that fails on purpose, for tests, benches and the soak (issue 47).

FaultyStore wraps any ObjectStore (LocalStore, S3Store over moto, a LatencyStore) and injects
the failures S3 shows in everyday use, by rule:

- "before": the request fails before the store saw it (a refused connection, a 500 or 503
  SlowDown answered up front): nothing was stored;
- "after": the store did the request, then the caller gets an error (a connection reset or a
  timeout after S3 stored the object: the answer is lost).

    store = FaultyStore(LocalStore(root), [Fault("put", "/manifest/", when="after")])

A rule matches an operation ("get", "get_range", "head", "put", "delete", "list", "*") and a
key containing `key_part`; it fires `times` times (-1: always), then the store behaves.
`fired` counts what fired, for tests to check that the fault they meant did happen.
"""

from __future__ import annotations

import builtins
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from memlake.errors import StorageError
from memlake.store.base import ObjectInfo, ObjectStore

T = TypeVar("T")


def lost_answer(op: str, key: str) -> Exception:
    return StorageError(f"S3 {op} failed for {key}: Connection reset by peer (injected)")


@dataclass
class Fault:
    op: str  # an ObjectStore operation as LatencyStore names it, or "*"
    key_part: str = ""  # the rule applies to keys containing this
    when: Literal["before", "after"] = "before"
    times: int = 1  # how many times it fires (-1: every time)
    error: Callable[[str, str], Exception] = field(default=lost_answer)

    def matches(self, op: str, key: str) -> bool:
        return self.times != 0 and self.op in ("*", op) and self.key_part in key


class FaultyStore:
    def __init__(self, inner: ObjectStore, faults: builtins.list[Fault]) -> None:
        self.inner = inner
        self.faults = faults
        self.fired: Counter[tuple[str, str]] = Counter()  # (op, when) -> times
        self._lock = threading.Lock()

    def _take(self, op: str, key: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.matches(op, key):
                    if fault.times > 0:
                        fault.times -= 1
                    self.fired[(op, fault.when)] += 1
                    return fault
        return None

    def _call(self, op: str, key: str, call: Callable[[], T]) -> T:
        fault = self._take(op, key)
        if fault is not None and fault.when == "before":
            raise fault.error(op, key)
        result = call()
        if fault is not None:
            raise fault.error(op, key)
        return result

    # ObjectStore -----------------------------------------------------------------------
    def get(self, key: str) -> bytes:
        return self._call("get", key, lambda: self.inner.get(key))

    def get_range(self, key: str, start: int, end: int) -> bytes:
        return self._call("get_range", key, lambda: self.inner.get_range(key, start, end))

    def size(self, key: str) -> int:
        return self._call("head", key, lambda: self.inner.size(key))

    def exists(self, key: str) -> bool:
        return self._call("head", key, lambda: self.inner.exists(key))

    def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        self._call("put", key, lambda: self.inner.put(key, data, if_absent=if_absent))

    def delete(self, key: str) -> None:
        self._call("delete", key, lambda: self.inner.delete(key))

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        return iter(self._call("list", prefix, lambda: builtins.list(self.inner.list(prefix))))

    def list_prefixes(self, prefix: str) -> builtins.list[str]:
        return self._call("list", prefix, lambda: self.inner.list_prefixes(prefix))

    def __getattr__(self, name: str) -> object:
        """What the inner store has beyond the protocol (LocalStore.remove_stale_temp_files)."""
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
