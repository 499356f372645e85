"""LatencyStore: S3's timing over any store (first byte, bandwidth, overlap), its counts and
sequential depth, and its injected faults; on the local store and on moto's S3."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memlake.store.base import ObjectNotFound, ObjectStore
from memlake.store.latency import LatencyModel, LatencyStore, SlowDown
from memlake.store.local import LocalStore
from tests.support.stores import local_or_s3

FIRST = 0.02  # s before the first byte in these tests


@pytest.fixture(params=["local", "s3"])
def inner(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    with local_or_s3(request.param, tmp_path) as store:
        yield store


def timed(call: object) -> float:
    t0 = time.perf_counter()
    call()  # type: ignore[operator]
    return time.perf_counter() - t0


def test_a_request_takes_its_first_byte_latency_plus_its_bytes_over_the_bandwidth(
    inner: ObjectStore,
) -> None:
    # GIVEN 20 ms before the first byte and 10 MB/s
    store = LatencyStore(inner, LatencyModel(first_byte=FIRST, bandwidth=10e6))
    inner.put("a", b"x" * 1_000_000)
    # WHEN the whole object (0.1 s of transfer) and 10 bytes of it are read
    whole = timed(lambda: store.get("a"))
    ranged = timed(lambda: store.get_range("a", 0, 10))
    # THEN each takes its modelled time (no less), and the counts say what was read
    assert whole >= FIRST + 0.1
    assert FIRST <= ranged < FIRST + 0.1
    stats = store.reset()
    assert stats.counts == {"get": 1, "get_range": 1}
    assert stats.bytes_read == 1_000_010
    assert stats.depth == 2  # one after the other


def test_requests_from_threads_overlap_as_on_s3_and_count_as_one_round_trip(
    tmp_path: Path,
) -> None:
    # (the local store: moto's in-process calls hold the GIL for milliseconds each, so 16 of
    # them queue past one latency and some start after others ended, a deeper chain)
    inner = LocalStore(tmp_path)
    store = LatencyStore(inner, LatencyModel(first_byte=0.05))
    for i in range(16):
        inner.put(f"k{i}", b"v")
    with ThreadPoolExecutor(16) as pool:
        took = timed(lambda: list(pool.map(lambda i: store.get(f"k{i}"), range(16))))
    # 16 requests of 50 ms side by side: about one latency, far from sixteen
    assert 0.05 <= took < 0.4
    stats = store.reset()
    assert stats.requests == 16
    assert stats.depth == 1
    assert stats.peak_in_flight >= 8  # (all 16 unless a thread started late)


def test_a_clients_cpu_a_request_is_spent_on_the_calling_thread_and_serialises(
    tmp_path: Path,
) -> None:
    """boto3's own work (client_cpu) holds the GIL: 8 requests side by side cost their
    latency once but their client CPU eight times over."""
    inner = LocalStore(tmp_path)
    inner.put("k", b"v")
    cpu = 0.01
    store = LatencyStore(inner, LatencyModel(first_byte=0.02, client_cpu=cpu))
    c0 = time.thread_time()
    store.get("k")
    assert time.thread_time() - c0 >= cpu
    with ThreadPoolExecutor(8) as pool:
        took = timed(lambda: list(pool.map(lambda _: store.get("k"), range(8))))
    assert took >= 8 * cpu * 0.9  # (one core's worth of Python: the GIL)
    assert store.stats.requests == 9


def test_the_depth_is_the_longest_chain_of_requests_that_waited_for_each_other(
    inner: ObjectStore,
) -> None:
    # GIVEN a read, then two side by side, then one more: three round trips
    store = LatencyStore(inner, LatencyModel(first_byte=FIRST), trace=True)
    inner.put("m", b"manifest")
    store.exists("m")
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: store.get_range("m", 0, 4), range(2)))
    store.get("m")
    # THEN the depth is 3 and the trace shows each request's place in the chain
    assert store.stats.depth == 3
    assert [r.depth for r in store.trace] == [1, 2, 2, 3]
    assert [r.op for r in store.trace] == ["head", "get_range", "get_range", "get"]
    assert all(r.end - r.start >= FIRST for r in store.trace)
    # AND reset starts a new run from depth 0
    store.reset()
    store.get("m")
    assert store.stats.depth == 1 and store.trace[0].depth == 1


def test_writes_lists_and_errors_take_time_and_count(inner: ObjectStore) -> None:
    store = LatencyStore(inner, LatencyModel(first_byte=FIRST))
    assert timed(lambda: store.put("w", b"12345")) >= FIRST
    assert list(store.list("")) and store.list_prefixes("") == []
    store.delete("w")
    with pytest.raises(ObjectNotFound):  # a failed request costs its latency too
        assert timed(lambda: store.get("w")) >= FIRST
    stats = store.reset()
    assert stats.bytes_written == 5
    assert stats.counts == {"put": 1, "list": 2, "delete": 1, "get": 1}
    assert stats.depth == 5


def test_tail_latency_and_slow_down_are_injected_at_their_share(tmp_path: Path) -> None:
    inner = LocalStore(tmp_path)
    inner.put("a", b"1")
    slow = LatencyStore(inner, LatencyModel(first_byte=0.01, tail_share=1.0, tail_factor=5))
    assert timed(lambda: slow.get("a")) >= 0.05
    failing = LatencyStore(inner, LatencyModel(first_byte=0.0, slow_down_share=1.0))
    with pytest.raises(SlowDown) as err:
        failing.get("a")
    assert err.value.retryable and err.value.code == "slow_down"
    assert failing.stats.faults == 1
    some = LatencyStore(inner, LatencyModel(first_byte=0.0, slow_down_share=0.3, seed=7))
    failed = 0
    for _ in range(400):
        try:
            some.get("a")
        except SlowDown:
            failed += 1
    assert 80 <= failed <= 160  # ~30% of 400, seeded
    assert some.stats.faults == failed


def test_a_hook_sees_every_request_before_its_latency(tmp_path: Path) -> None:
    store = LatencyStore(LocalStore(tmp_path), LatencyModel(first_byte=0.0))
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()

    def hook(op: str, key: str) -> None:
        with lock:
            seen.append((op, key))

    store.before = hook
    store.put("a/b", b"1")
    store.get_range("a/b", 0, 1)
    assert seen == [("put", "a/b"), ("get_range", "a/b")]


@pytest.mark.parametrize(
    ("text", "first", "band"),
    [("25ms", 0.025, 90e6), ("25ms,90MB/s", 0.025, 90e6), ("0.1s, 5mb/s", 0.1, 5e6)],
)
def test_a_model_is_parsed_from_its_setting(text: str, first: float, band: float) -> None:
    model = LatencyModel.parse(text)
    assert model.first_byte == pytest.approx(first) and model.bandwidth == pytest.approx(band)


@pytest.mark.parametrize("text", ["", "25", "fast", "-1ms", "25ms,0MB/s", "25ms,90", "1ms,2MB/s,3"])
def test_a_bad_model_setting_is_refused_with_an_example(text: str) -> None:
    with pytest.raises(ValueError, match="like"):
        LatencyModel.parse(text)


def test_the_server_puts_the_model_on_its_store_when_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlake.config import Settings
    from memlake.errors import ConfigurationError
    from memlake.services import make_store

    monkeypatch.setenv("MEMLAKE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MEMLAKE_STORE_LATENCY", "5ms,50MB/s")
    store = make_store(Settings.from_env())
    assert isinstance(store, LatencyStore) and isinstance(store.inner, LocalStore)
    assert store.model.first_byte == pytest.approx(0.005)
    assert timed(lambda: store.put("a", b"1")) >= 0.005
    monkeypatch.setenv("MEMLAKE_STORE_LATENCY", "fast")
    with pytest.raises(ConfigurationError, match="MEMLAKE_STORE_LATENCY"):
        Settings.from_env()
    monkeypatch.delenv("MEMLAKE_STORE_LATENCY")
    assert isinstance(make_store(Settings.from_env()), LocalStore)
