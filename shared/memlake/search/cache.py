"""Loaded shards, kept across requests (and warm Lambda invocations).

Shard objects are immutable (a rebuild writes a new key), so a cached shard never goes stale:
memory first (LRU bounded by bytes), then an optional directory (Lambda's /tmp survives between
invocations of a warm container even when memory is tight), then the object store. Several
missing shards are fetched in parallel.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from memlake.search.index import Shard
from memlake.store.base import ObjectStore

LOAD_THREADS = 8
DISK_BYTES = 512 << 20  # Lambda's /tmp is 512 MB by default; shards are re-fetchable


@dataclass
class LoadStats:
    """What the last load_many did: shards fetched from the store, their bytes, disk hits."""

    fetched: int = 0
    bytes: int = 0
    disk_hits: int = 0


class ShardCache:
    def __init__(self, max_bytes: int = 1 << 30, disk_dir: Path | None = None) -> None:
        self.max_bytes = max_bytes
        self.disk_dir = disk_dir
        self._items: OrderedDict[str, Shard] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self.last = LoadStats()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def cached(self, key: str) -> Shard | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def add(self, key: str, shard: Shard) -> None:
        with self._lock:
            if key not in self._items:
                self._items[key] = shard
                self._bytes += shard.nbytes
            while self._bytes > self.max_bytes and len(self._items) > 1:
                _, old = self._items.popitem(last=False)
                self._bytes -= old.nbytes

    def _disk_path(self, key: str) -> Path | None:
        if self.disk_dir is None:
            return None
        return self.disk_dir / (hashlib.sha256(key.encode()).hexdigest() + ".npz")

    def _to_disk(self, key: str, data: bytes) -> None:
        path = self._disk_path(key)
        if path is None or path.exists():
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
            self._trim_disk()
        except OSError:
            pass  # a full /tmp only costs a later fetch

    def _trim_disk(self) -> None:
        """Remove the least recently used files once the directory holds over DISK_BYTES."""
        assert self.disk_dir is not None
        files = [(p.stat(), p) for p in self.disk_dir.glob("*.npz")]
        total = sum(st.st_size for st, _ in files)
        for st, path in sorted(files, key=lambda f: f[0].st_atime):
            if total <= DISK_BYTES:
                break
            path.unlink(missing_ok=True)
            total -= st.st_size

    def _load(self, store: ObjectStore, key: str, stats: LoadStats) -> Shard:
        hit = self.cached(key)
        if hit is not None:
            return hit
        path = self._disk_path(key)
        data: bytes | None = None
        if path is not None and path.exists():
            try:
                data = path.read_bytes()
                with self._lock:
                    stats.disk_hits += 1
            except OSError:
                data = None
        if data is None:
            data = store.get(key)
            with self._lock:
                stats.fetched += 1
                stats.bytes += len(data)
            self._to_disk(key, data)
        shard = Shard.from_bytes(data)
        self.add(key, shard)
        return shard

    def load_many(self, store: ObjectStore, keys: Sequence[str]) -> list[Shard]:
        """The shards for `keys`, in order; missing ones fetched in parallel."""
        stats = LoadStats()
        missing = [k for k in keys if self.cached(k) is None]
        if len(missing) > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(LOAD_THREADS, thread_name_prefix="memlake-shard")
            list(self._pool.map(lambda k: self._load(store, k, stats), missing))
        out = [self._load(store, k, stats) for k in keys]
        self.last = stats
        return out
