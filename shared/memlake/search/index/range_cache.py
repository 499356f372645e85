"""Byte ranges of immutable objects, kept across requests (and warm Lambda invocations).

The ranged-read twin of ShardCache (memlake.search.index.cache): shard objects never change under a
key (a rebuild writes a new key), so a cached range never goes stale. An entry is one exact
range (key, start, end) as a reader asked for it (a member's rows, a probed list, a header),
not the coalesced request that fetched it, so the same ask hits whatever else was fetched with
it. Memory first (LRU bounded by bytes), then an optional directory (/tmp on Lambda; its own
byte budget), then the store. `stats` counts hits, misses and what came from the store;
benchmarks take them per call with reset().
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

DISK_BYTES = 256 << 20  # half of Lambda's default /tmp; ShardCache may use the rest

RangeKey = tuple[str, int, int]


def tenant_stem(object_key: str) -> str:
    """The start of the cache file names of every object of one tenant (`tenants/<t>/...`)."""
    tenant = "/".join(object_key.split("/", 2)[:2])
    return hashlib.sha256(tenant.encode()).hexdigest()[:12]


def disk_stem(object_key: str) -> str:
    """What names an object's files in a cache directory: hashes of its tenant and its key, so
    the files of one object, or of one tenant, can be found and removed (an erasure:
    memlake.erasure); the key itself never becomes a path."""
    return tenant_stem(object_key) + hashlib.sha256(object_key.encode()).hexdigest()[:20]


def write_atomically(path: Path, data: bytes) -> bool:
    """Write a cache file whole or not at all (a temp file renamed over it); False when the
    directory cannot take it (a full /tmp only costs a later fetch)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return True
    except OSError:
        return False


def trim_dir(directory: Path, pattern: str, budget: int, by: str = "st_mtime") -> int:
    """Remove the files matching `pattern` oldest first (by the stat field `by`) until they hold
    at most `budget` bytes; their bytes left. Files another process removed are skipped."""
    files = []
    for p in directory.glob(pattern):
        try:
            files.append((p.stat(), p))
        except OSError:
            continue
    total = sum(st.st_size for st, _ in files)
    for st, path in sorted(files, key=lambda f: getattr(f[0], by)):
        if total <= budget:
            break
        path.unlink(missing_ok=True)
        total -= st.st_size
    return total


@dataclass
class RangeStats:
    hits: int = 0  # ranges answered from memory
    disk_hits: int = 0  # ranges answered from the directory
    misses: int = 0  # ranges the store had to answer
    requests: int = 0  # store requests made for them (coalesced: <= misses)
    bytes_fetched: int = 0  # bytes the store returned (gaps between coalesced ranges too)


class RangeCache:
    def __init__(self, max_bytes: int = 256 << 20, disk_dir: Path | None = None) -> None:
        self.max_bytes = max_bytes
        self.disk_dir = disk_dir
        self.stats = RangeStats()
        self._items: OrderedDict[RangeKey, bytes] = OrderedDict()
        self._bytes = 0
        self._disk_bytes: int | None = None  # estimate; None until the directory is scanned
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self._bytes

    def reset(self) -> RangeStats:
        """The stats so far (zeroed here)."""
        with self._lock:
            old, self.stats = self.stats, RangeStats()
        return old

    def count(self, **fields: int) -> None:
        with self._lock:
            s = self.stats
            for name, value in fields.items():
                setattr(s, name, getattr(s, name) + value)

    def lookup(self, key: RangeKey, memory: bool = True) -> bytes | None:
        """The cached bytes of exactly this range (memory, then disk), or None (a miss); a
        disk hit is kept in memory unless `memory` is False."""
        return self.lookup_many([key], memory)[0]

    def lookup_many(self, keys: Sequence[RangeKey], memory: bool = True) -> list[bytes | None]:
        """`lookup` of each key, the memory ones under one lock: a cold search looks up ~1,000
        ranges (its probed lists), ~20 us each one at a time (decision 4401)."""
        with self._lock:
            items = self._items
            found = [items.get(key) for key in keys]
            for key, data in zip(keys, found, strict=True):
                if data is not None:
                    items.move_to_end(key)
            hits = sum(data is not None for data in found)
            self.stats.hits += hits
            if self.disk_dir is None:
                self.stats.misses += len(found) - hits
                return found
        pairs = zip(keys, found, strict=True)
        return [d if d is not None else self._from_disk(k, memory) for k, d in pairs]

    def _from_disk(self, key: RangeKey, memory: bool) -> bytes | None:
        path = self._disk_path(key)
        if path is not None:
            try:
                data = path.read_bytes()
                os.utime(path)  # recently used: the trim goes by modification time
            except OSError:
                data = None
            if data is not None and len(data) == key[2] - key[1]:
                self.count(disk_hits=1)
                if memory:
                    self._remember(key, data)
                return data
        self.count(misses=1)
        return None

    def add(self, key: RangeKey, data: bytes, memory: bool = True) -> None:
        """Keep a range the store just returned (memory unless `memory` is False, and disk
        when configured)."""
        if memory:
            self._remember(key, data)
        self._to_disk(key, data)

    def _remember(self, key: RangeKey, data: bytes) -> None:
        if len(data) > self.max_bytes:
            return
        with self._lock:
            if key not in self._items:
                self._items[key] = data
                self._bytes += len(data)
            while self._bytes > self.max_bytes:
                _, old = self._items.popitem(last=False)
                self._bytes -= len(old)

    def _disk_path(self, key: RangeKey) -> Path | None:
        if self.disk_dir is None:
            return None
        name = hashlib.sha256(f"{key[0]}\0{key[1]}\0{key[2]}".encode()).hexdigest()
        return self.disk_dir / f"{disk_stem(key[0])}-{name[:32]}.range"

    def objects(self, prefix: str) -> set[str]:
        """The keys of the objects whose ranges are held in memory, of those under `prefix`."""
        with self._lock:
            return {k[0] for k in self._items if k[0].startswith(prefix)}

    def forget(self, object_keys: Iterable[str]) -> None:
        """Drop every range of these objects, in memory and on disk (an erasure removed them:
        memlake.erasure)."""
        gone = set(object_keys)
        with self._lock:
            for key in [k for k in self._items if k[0] in gone]:
                self._bytes -= len(self._items.pop(key))
        if self.disk_dir is not None:
            for obj in gone:
                for path in self.disk_dir.glob(f"{disk_stem(obj)}-*.range"):
                    path.unlink(missing_ok=True)
                    self._disk_bytes = None  # scanned again when next needed

    def _to_disk(self, key: RangeKey, data: bytes) -> None:
        path = self._disk_path(key)
        if path is None or path.exists():
            return
        if not write_atomically(path, data):
            return
        with self._lock:
            over = self._disk_bytes is None or self._disk_bytes + len(data) > DISK_BYTES
            if not over and self._disk_bytes is not None:
                self._disk_bytes += len(data)
        if over:
            self._trim_disk()

    def _trim_disk(self) -> None:
        """Remove the least recently used files until the directory holds at most DISK_BYTES
        (a scan; only when the running estimate says the budget is reached)."""
        assert self.disk_dir is not None
        total = trim_dir(self.disk_dir, "*.range", DISK_BYTES)
        with self._lock:
            self._disk_bytes = total
