"""memlake.pools: LazyPool (one executor per pool, built on first use, threads named),
run_shared (jobs shared by the caller and a pool's threads) and Helpers (calls handed to
named threads, taken back unstarted or waited for)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memlake.pools import Helpers, LazyPool, run_shared


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


def test_a_helper_runs_a_call_on_its_thread_and_join_waits_and_raises() -> None:
    helpers = Helpers(2, "test-helpers")
    ran: list[str] = []
    job = helpers.start(lambda: ran.append(threading.current_thread().name))
    deadline = time.monotonic() + 10
    while not ran and time.monotonic() < deadline:
        time.sleep(0.001)
    assert job.join() is True and ran[0].startswith("test-helpers-")

    started = threading.Event()

    def fail() -> None:
        started.set()
        raise ValueError("from the helper")

    failed = helpers.start(fail)
    assert started.wait(10)
    with pytest.raises(ValueError, match="from the helper"):
        failed.join()


def test_a_call_no_helper_started_is_taken_back_and_never_runs() -> None:
    """With every helper busy, a call waits in the queue; join takes it back (False), and
    when a helper frees up it does not run it. At most `threads` threads start."""
    helpers = Helpers(1, "test-busy")
    release, running = threading.Event(), threading.Event()

    def hold() -> None:
        running.set()
        release.wait()

    busy = helpers.start(hold)
    assert running.wait(10)
    ran: list[int] = []
    queued = helpers.start(lambda: ran.append(1))
    assert queued.join() is False
    release.set()
    assert busy.join() is True
    time.sleep(0.05)
    assert ran == []
    names = [t.name for t in threading.enumerate() if t.name.startswith("test-busy-")]
    assert names == ["test-busy-0"]


def test_exit_waits_for_a_running_call_and_stops_idle_helpers() -> None:
    """A process that exits while a helper runs a call (a search whose caller failed) lets it
    finish first, as a ThreadPoolExecutor does, rather than cut a thread off in C code at
    finalisation (it aborts the process); idle helpers do not keep it alive."""
    child = (
        "import time\n"
        "from memlake.pools import Helpers\n"
        "helpers = Helpers(2, 'exit-test')\n"
        "helpers.start(lambda: None).join()\n"  # an idle helper left behind
        "helpers.start(lambda: (time.sleep(0.3), print('finished', flush=True)))\n"
        "time.sleep(0.05)\n"  # running now; the main thread exits without waiting for it
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "shared")}
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True,
                         text=True, timeout=30)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "finished"


def test_prestart_starts_every_thread_once_and_quietly_lets_a_process_exit() -> None:
    pool = LazyPool(6, "test-prestart")
    pool.prestart()
    pool.prestart()  # once per pool
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        started = [t for t in threading.enumerate() if t.name.startswith("test-prestart_")]
        if len(started) == 6:
            break
        time.sleep(0.01)
    assert len(started) == 6
    # a process that exits at once (the stdio door given no input) says nothing about it
    code = "from memlake.pools import STORE_IO; STORE_IO.prestart()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
