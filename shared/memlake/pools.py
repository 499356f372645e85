"""Process-wide thread pools, created on first use (a cold Lambda that never needs one starts
none)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor


class LazyPool:
    """A ThreadPoolExecutor of `threads` threads named `prefix`-N, built by the first `get`."""

    def __init__(self, threads: int, prefix: str) -> None:
        self.threads, self.prefix = threads, prefix
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix=self.prefix)
            return self._pool


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def run_shared(jobs: Sequence[Callable[[], None]], helpers: int, pool: LazyPool) -> None:
    """Run `jobs` on the calling thread and up to `helpers` threads of `pool`, each taking the
    next job until none is left; returns when all ran, raising the first job's error.

    The caller never waits for a helper that has not started: with the pool busy it runs every
    job itself, so sharing is never slower than running alone by more than a queued no-op.
    (concurrent.futures has no work-sharing map: Executor.map waits on every submitted task.)
    """
    todo = iter(jobs)
    errors: list[BaseException] = []
    left = len(jobs)
    lock = threading.Condition()

    def work() -> None:
        nonlocal left
        while True:
            with lock:
                job = next(todo, None)
            if job is None:
                return
            try:
                job()
            except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
                errors.append(e)
            finally:
                with lock:
                    left -= 1
                    lock.notify_all()

    if len(jobs) > 1:
        executor = pool.get()
        for _ in range(min(helpers, len(jobs) - 1)):
            executor.submit(work)
    work()
    with lock:
        lock.wait_for(lambda: left == 0)
    if errors:
        raise errors[0]
