"""memlake.pools: LazyPool (one executor per pool, built on first use, threads named) and
run_shared (jobs shared by the caller and a pool's threads)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from memlake.pools import LazyPool, run_shared


def test_a_lazy_pool_builds_one_executor_on_first_use() -> None:
    pool = LazyPool(2, "memlake-test")
    assert pool._pool is None  # nothing started before it is needed
    got = {pool.get() for _ in range(5)}
    assert len(got) == 1
    name = pool.get().submit(lambda: threading.current_thread().name).result(5)
    assert name.startswith("memlake-test")


def test_threads_racing_for_the_first_use_share_one_executor() -> None:
    pool = LazyPool(1, "memlake-race")
    seen: list[object] = []
    start = threading.Barrier(8)

    def first() -> None:
        start.wait()
        seen.append(pool.get())

    racers = [threading.Thread(target=first) for _ in range(8)]
    for t in racers:
        t.start()
    for t in racers:
        t.join()
    assert len({id(p) for p in seen}) == 1


def test_run_shared_runs_every_job_once_on_the_caller_and_helpers() -> None:
    pool = LazyPool(2, "memlake-share")
    ran: list[tuple[int, str]] = []
    gate = threading.Barrier(2, timeout=5)  # the first two jobs meet: two threads ran them

    def job(i: int) -> Callable[[], None]:
        def run() -> None:
            if i < 2:
                gate.wait()
            ran.append((i, threading.current_thread().name))

        return run

    run_shared([job(i) for i in range(6)], 1, pool)
    assert sorted(i for i, _ in ran) == list(range(6))
    names = {name for _, name in ran}
    assert threading.current_thread().name in names
    assert any(n.startswith("memlake-share") for n in names)


def test_run_shared_does_not_wait_for_a_helper_that_never_started() -> None:
    pool = LazyPool(1, "memlake-busy")
    release = threading.Event()
    blocker = pool.get().submit(release.wait, 10)  # the pool's one thread is busy
    ran: list[str] = []
    try:
        run_shared([lambda: ran.append(threading.current_thread().name)] * 4, 1, pool)
        assert ran == [threading.current_thread().name] * 4  # the caller ran them all
    finally:
        release.set()
        blocker.result(5)


def test_run_shared_raises_the_first_error_after_every_job_ran() -> None:
    pool = LazyPool(2, "memlake-fail")
    ran: list[int] = []

    def boom() -> None:
        raise ValueError("bad batch")

    jobs: list[Callable[[], None]] = [boom] + [lambda i=i: ran.append(i) for i in range(5)]
    with pytest.raises(ValueError, match="bad batch"):
        run_shared(jobs, 2, pool)
    assert sorted(ran) == list(range(5))
