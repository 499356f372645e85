"""Process-wide thread pools, created on first use (a cold Lambda that never needs one starts
none)."""

from __future__ import annotations

import threading
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
