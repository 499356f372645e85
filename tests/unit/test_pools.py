"""memlake.pools.LazyPool: one executor per pool, built on first use, threads named."""

from __future__ import annotations

import threading

from memlake.pools import LazyPool


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
