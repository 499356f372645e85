"""Process-wide thread pools, created on first use (a cold Lambda that never needs one starts
none)."""

from __future__ import annotations

import _thread
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from queue import SimpleQueue

#: how long prestart holds each thread it starts
PRESTART_HOLD = 0.02


class LazyPool:
    """A ThreadPoolExecutor of `threads` threads named `prefix`-N, built by the first `get`."""

    def __init__(self, threads: int, prefix: str) -> None:
        self.threads, self.prefix = threads, prefix
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._prestarted = False

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix=self.prefix)
            return self._pool

    def prestart(self) -> None:
        """Start the pool's threads now, from a background thread: a ThreadPoolExecutor starts
        one per submit while none is idle, and on a busy cold core each start costs
        milliseconds inside the caller's round of requests (one of them then starts after
        another ended: a round trip more). Each thread is held PRESTART_HOLD seconds so the
        next submit starts another. Once per pool."""
        with self._lock:
            if self._prestarted:
                return
            self._prestarted = True
        threading.Thread(target=self._start_all, name=f"{self.prefix}-start", daemon=True).start()

    def _start_all(self) -> None:
        try:
            pool = self.get()
            for _ in range(self.threads):
                pool.submit(time.sleep, PRESTART_HOLD)
        except RuntimeError:  # the process is exiting: no pool takes work any more
            return


#: requests to the object store that a caller waits on (ranged reads of shards, the segments
#: of a search's hits): one pool, so a cold search's later rounds reuse the threads its first
#: rounds started (starting a thread costs milliseconds on a busy cold core, and a request
#: that starts after another ended is one more round trip; decision 4401). Each thread mostly
#: waits on the store, which serves 100+ requests side by side. A task here never waits on
#: another task of this pool.
STORE_IO = LazyPool(128, "memlake-io")


class Job:
    """One call handed to a Helpers thread: run there once, unless the caller takes it back
    first (`join`). Both race for one lock: the helper runs the call if it gets it, else the
    call never runs."""

    def __init__(self, fn: Callable[[], object]) -> None:
        self._fn = fn
        self._claim = _thread.allocate_lock()
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._error: BaseException | None = None

    def run(self) -> None:
        """On a helper thread: the call, unless the caller took it back."""
        if not self._claim.acquire(blocking=False):
            return
        try:
            self._fn()
        except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
            self._error = e
        finally:
            self._done.release()

    def join(self) -> bool:
        """The caller's end: take the call back if no helper started it (False), else wait
        for it (True) and raise what it raised."""
        if self._claim.acquire(blocking=False):
            return False
        self._done.acquire()
        if self._error is not None:
            raise self._error
        return True


class Helpers:
    """Up to `threads` threads named `prefix`-N, started by the first calls handed over, each
    running the next Job of one queue. For a call the caller may take back unstarted: a
    ThreadPoolExecutor's submit and Future cost ~110 us after a pass over memory (Python
    locks, a Condition, the idle-thread check), a Job ~55 us (a C queue and two C locks; most
    of it the wake-up of the thread).

    At the interpreter's exit the threads finish the call they run, then stop, and exit waits
    for them, as for a ThreadPoolExecutor's: a daemon thread still in FAISS or a kernel when
    the interpreter finalises would take the GIL no more and be unwound through C++ frames,
    which aborts the process ("terminate called without an active exception")."""

    def __init__(self, threads: int, prefix: str) -> None:
        self.threads, self.prefix = threads, prefix
        self._queue: SimpleQueue[Job | None] = SimpleQueue()
        self._started = 0
        self._lock = threading.Lock()

    def start(self, fn: Callable[[], object]) -> Job:
        """Hand `fn` to the next free thread (it waits in the queue while all are busy; with
        none to start, during the interpreter's exit, it never runs: `Job.join` takes it
        back)."""
        job = Job(fn)
        if self._started < self.threads:
            with self._lock:
                if self._started < self.threads:
                    self._start_thread()
        self._queue.put(job)
        return job

    def _start_thread(self) -> None:
        if not self._started:
            try:  # (concurrent.futures' own hook: called before exit joins the threads)
                threading._register_atexit(self._stop)  # type: ignore[attr-defined]
            except RuntimeError:  # the interpreter is exiting: start none
                return
        self._started += 1
        threading.Thread(target=self._serve, name=f"{self.prefix}-{self._started - 1}").start()

    def _stop(self) -> None:
        for _ in range(self._started):
            self._queue.put(None)

    def _serve(self) -> None:
        while (job := self._queue.get()) is not None:
            job.run()


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
