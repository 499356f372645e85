"""A store wrapper that behaves like S3 in time: first-byte latency, per-request bandwidth,
overlapping concurrency, optional tail latency and injected faults (docs/decisions/4401).

Wraps any ObjectStore (a LocalStore, an S3Store on moto): every request takes `first_byte`
seconds plus its bytes over `bandwidth` (the inner store's own time counts towards it, so over
a local directory a request costs what the model says). Requests made from several threads
sleep side by side, as S3 serves them, so a cold read's time is its sequential round trips
times the latency plus its bytes, exactly what decides a cold search on object storage.

It counts what a request budget needs (`stats`): requests per operation, bytes read and
written, the peak number in flight and the **sequential depth**: the longest chain of requests
each of which started after the one before it finished, i.e. the round trips on the critical
path. A request's depth is one more than the deepest request finished when it started; the
depth of a run is the deepest request of it. `trace` keeps every request when asked (benches).

Faults for the reliability work: `tail` (a share of requests slowed by a factor),
`slow_down` (a share answered with S3's 503 SlowDown after the latency, as the retryable
StorageError an S3Store raises once botocore's retries are spent), seeded for repeatable runs.
Nothing here runs unless a bench, a test or MEMLAKE_STORE_LATENCY (memlake.services: `memlake
serve` on the S3 model) asks.
"""

from __future__ import annotations

import builtins
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from memlake.config_values import parse_latency
from memlake.errors import StorageError
from memlake.store.base import ObjectInfo, ObjectStore

T = TypeVar("T")

#: S3 Standard as the issue's model takes it: 25 ms before the first byte, 90 MB/s a request
S3_FIRST_BYTE = 0.025
S3_BANDWIDTH = 90e6


class SlowDown(StorageError):
    """S3's 503 SlowDown: too many requests on a prefix; retry after a short, jittered wait."""

    code = "slow_down"
    retryable = True


@dataclass(frozen=True)
class LatencyModel:
    """How long a request takes: `first_byte` seconds, then its bytes at `bandwidth` B/s.
    `tail_share` of requests (seeded) take `tail_factor` times the first-byte latency;
    `slow_down_share` of them fail with SlowDown after it. `client_cpu`: seconds of Python
    each request costs the thread that makes it, holding the GIL, before it is sent: boto3's
    own work (a ranged GET ~2 ms of client CPU against moto's server in another process, a
    SigV4-signed urllib3 GET ~1.1: tests/bench/s3_client_cpu_bench.py, decision 4401). 0 (the
    default): not modelled."""

    first_byte: float = S3_FIRST_BYTE
    bandwidth: float = S3_BANDWIDTH
    tail_share: float = 0.0
    tail_factor: float = 1.0
    slow_down_share: float = 0.0
    seed: int = 0
    client_cpu: float = 0.0

    @classmethod
    def parse(cls, text: str) -> LatencyModel:
        """'25ms', '25ms,90MB/s' or '0.025s,50MB/s' (what MEMLAKE_STORE_LATENCY holds)."""
        first, band = parse_latency(text)
        return cls(first_byte=first, bandwidth=S3_BANDWIDTH if band is None else band)

    def seconds(self, nbytes: int, slow: bool) -> float:
        first = self.first_byte * (self.tail_factor if slow else 1.0)
        return first + nbytes / self.bandwidth


@dataclass(frozen=True)
class Request:
    """One request as the trace keeps it (times in seconds since the store was made)."""

    op: str
    key: str
    nbytes: int
    start: float
    end: float
    depth: int
    range_start: int | None = None  # a ranged read's first byte


@dataclass
class LatencyStats:
    counts: Counter[str] = field(default_factory=Counter)
    bytes_read: int = 0
    bytes_written: int = 0
    peak_in_flight: int = 0
    depth: int = 0  # sequential round trips on the critical path
    faults: int = 0

    @property
    def requests(self) -> int:
        return sum(self.counts.values())


class LatencyStore:
    """`inner` with S3's timing (see the module's docstring); thread-safe."""

    remote = True  # a request costs a round trip (memlake.lake.head_copy.put_hint)

    def __init__(
        self, inner: ObjectStore, model: LatencyModel | None = None, *, trace: bool = False
    ) -> None:
        self.inner = inner
        self.model = model or LatencyModel()
        self.stats = LatencyStats()
        self.tracing = trace
        self.trace: list[Request] = []
        self._lock = threading.Lock()
        self._rng = random.Random(self.model.seed)
        self._in_flight = 0
        self._done_depth = 0  # the deepest request finished so far
        self._t0 = time.perf_counter()
        #: called as (op, key) before a request's latency; tests make it raise or block
        self.before: Callable[[str, str], None] | None = None

    def reset(self) -> LatencyStats:
        """The stats so far, zeroed here (and the trace, and the depth: a new run starts)."""
        with self._lock:
            old, self.stats = self.stats, LatencyStats()
            self._done_depth = 0
            self.trace = []
        return old

    # the model -------------------------------------------------------------------------
    def _timed(
        self,
        op: str,
        key: str,
        call: Callable[[], T],
        size: Callable[[T], int],
        range_start: int | None = None,
    ) -> T:
        with self._lock:
            self._in_flight += 1
            depth = self._done_depth + 1
            self.stats.counts[op] += 1
            self.stats.peak_in_flight = max(self.stats.peak_in_flight, self._in_flight)
            slow = self._rng.random() < self.model.tail_share
            fail = self._rng.random() < self.model.slow_down_share
        if self.model.client_cpu:  # the client's own work, then the request's time
            _spin(self.model.client_cpu)
        start = time.perf_counter()
        nbytes = 0
        try:
            if self.before is not None:
                self.before(op, key)
            if fail:
                _sleep_until(start + self.model.seconds(0, slow))
                with self._lock:
                    self.stats.faults += 1
                raise SlowDown(f"S3 {op} failed for {key}: SlowDown (503)", hint=_RETRY)
            result = call()
            nbytes = size(result)
            _sleep_until(start + self.model.seconds(nbytes, slow))
            return result
        finally:
            end = time.perf_counter()
            with self._lock:
                self._in_flight -= 1
                self._done_depth = max(self._done_depth, depth)
                self.stats.depth = max(self.stats.depth, depth)
                if op in ("get", "get_range"):
                    self.stats.bytes_read += nbytes
                if self.tracing:
                    t0 = self._t0
                    self.trace.append(
                        Request(op, key, nbytes, start - t0, end - t0, depth, range_start)
                    )

    # ObjectStore -----------------------------------------------------------------------
    def get(self, key: str) -> bytes:
        return self._timed("get", key, lambda: self.inner.get(key), len)

    def get_range(self, key: str, start: int, end: int) -> bytes:
        return self._timed(
            "get_range", key, lambda: self.inner.get_range(key, start, end), len, start
        )

    def size(self, key: str) -> int:
        return self._timed("head", key, lambda: self.inner.size(key), _none)

    def exists(self, key: str) -> bool:
        return self._timed("head", key, lambda: self.inner.exists(key), _none)

    def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        with self._lock:
            self.stats.bytes_written += len(data)
        self._timed(
            "put", key, lambda: self.inner.put(key, data, if_absent=if_absent), lambda _: len(data)
        )

    def delete(self, key: str) -> None:
        self._timed("delete", key, lambda: self.inner.delete(key), _none)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """One request per listing (S3 pages 1,000 keys a request; listings are maintenance's)."""
        return iter(self._timed("list", prefix, lambda: list(self.inner.list(prefix)), _none))

    def list_prefixes(self, prefix: str) -> builtins.list[str]:
        return self._timed("list", prefix, lambda: self.inner.list_prefixes(prefix), _none)

    def __getattr__(self, name: str) -> object:
        """What the inner store has beyond the protocol (LocalStore.remove_stale_temp_files)."""
        if name == "inner":  # not set yet (copying, unpickling): no recursion through it
            raise AttributeError(name)
        return getattr(self.inner, name)


_RETRY = "The object store is throttling requests: retry after a second or two."


def _none(_: object) -> int:
    return 0


def _sleep_until(deadline: float) -> None:
    left = deadline - time.perf_counter()
    if left > 0:
        time.sleep(left)


def _spin(seconds: float) -> None:
    """Run Python on this thread for `seconds` of its CPU time (a client library's work)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
