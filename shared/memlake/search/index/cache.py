"""Loaded shards, kept across requests (and warm Lambda invocations).

Shard objects are immutable (a rebuild writes a new key), so a cached shard never goes stale:
memory first (LRU bounded by bytes), then an optional directory (Lambda's /tmp survives between
invocations of a warm container even when memory is tight), then the object store. Several
missing shards are fetched in parallel.

A search passes the shards' manifest entries (`infos`): a big sealed shard (`lazy`) is then
opened by byte ranges (Shard.from_ranges, docs/decisions/1306), its size from the manifest (no
HEAD), and its ranges cached in `ranges` (a RangeCache: memory and the same directory). One
budget bounds both: the RangeCache gets RANGE_SHARE of `max_bytes`, the shards the rest, and a
shard's bytes include what FAISS builds for it later (lists a search added, a flat index), so
the bound stays honest as searches warm a shard up. Writers (no infos) always get whole shards.

Ranged reads make a cold search cheap but cost every new query its re-score rows and postings
(warm p50 at 10k x 20 rose from ~15 to ~47 ms). So when everything a search touched fits the
shard budget (`PROMOTE`, measured in decision 1306), its ranged shards are fetched whole in the
background and replace the ranged ones: a tenant that fits memory is searched from memory, one
that does not stays ranged and bounded (no churn: a set that does not fit is never promoted).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memlake.errors import CorruptObject
from memlake.lake.checksums import digest, missing, verify
from memlake.search.index import npz_layout
from memlake.search.index.npz_format import ArrayInfo, bad
from memlake.search.index.range_cache import (
    RangeCache,
    disk_stem,
    tenant_stem,
    trim_dir,
    write_atomically,
)
from memlake.search.index.ranges import RangedNpz
from memlake.search.index.shard import Shard
from memlake.search.index.shard_source import RANGED_COPIES
from memlake.store.base import ObjectNotFound, ObjectStore

if TYPE_CHECKING:
    from memlake.search.index.state import ShardInfo

LOAD_THREADS = 8
#: half of Lambda's default 512 MB /tmp; the RangeCache keeps the other half (its DISK_BYTES)
DISK_BYTES = 256 << 20
#: objects from this size open by ranges (format 3, sealed; decision 1306 has the measurement)
LAZY_MIN_BYTES = 4 << 20
#: coalescing gap of a ranged shard's reads: re-score rows and probed lists are scattered over
#: the object, and 1305's 256 KiB merged most of a tier-1 shard's vectors (decision 1306)
LAZY_GAP = 16 << 10
#: the share of the memory budget the RangeCache gets (postings and re-score rows)
RANGE_SHARE = 0.25
#: fetch ranged shards whole in the background (once per key, one at a time) when all the
#: shards a search touched take at most PROMOTE_SHARE of the shard budget (a whole shard grows
#: by its FAISS lists, up to a fifth of its vector bytes, as searches probe them)
PROMOTE = True
#: shard checksums remembered between `expect` and the loads it precedes
DIGESTS_KEPT = 4096
PROMOTE_SHARE = 0.7


def _layout(info: ShardInfo) -> dict[str, ArrayInfo] | None:
    """The arrays' places the manifest records for the shard (None: read from the object)."""
    if not info.arrays:
        return None
    return npz_layout.from_json(info.key, info.array_table(), info.bytes)


def resident(info: ShardInfo) -> int:
    """The bytes of the shard a whole load holds: its object's, but the copies read by ranges
    only (shard_source.RANGED_COPIES: the vectors in list order, the postings by term)."""
    copies = [(d, shape) for name, _, d, shape in info.arrays if name in RANGED_COPIES]
    return info.bytes - sum(int(np.dtype(d).itemsize * math.prod(shape)) for d, shape in copies)


def lazy(info: ShardInfo) -> bool:
    """Whether a search opens this shard by ranges rather than loading it whole."""
    return info.format >= 3 and not info.tail and info.bytes >= LAZY_MIN_BYTES


@dataclass
class LoadStats:
    """What the last load_many did: shards fetched from the store, their bytes, disk hits."""

    fetched: int = 0
    bytes: int = 0
    disk_hits: int = 0
    ranged: int = 0  # shards opened by ranges (their bytes: ShardCache.ranges.stats)


class ShardCache:
    def __init__(self, max_bytes: int = 1 << 30, disk_dir: Path | None = None) -> None:
        share = int(max_bytes * RANGE_SHARE)
        self.max_bytes = max_bytes - share
        self.disk_dir = disk_dir
        self.ranges = RangeCache(share, disk_dir)
        self._items: OrderedDict[str, Shard] = OrderedDict()
        self._sizes: dict[str, int] = {}  # bytes each cached shard was counted with
        self._bytes = 0
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._promoting: dict[str, Future[None]] = {}
        self._promoter: ThreadPoolExecutor | None = None
        self.last = LoadStats()
        #: the sha256 the manifest records for shard keys about to load (whole reads verify
        #: it); every load path calls `expect` just before, so a bounded LRU is enough (each
        #: write makes a new tail key: an unbounded map would grow with every commit)
        self._digests: OrderedDict[str, str] = OrderedDict()

    @property
    def nbytes(self) -> int:
        """Bytes held in memory: shards (their FAISS structures too) and cached ranges."""
        return self._bytes + self.ranges.nbytes

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._sizes.clear()
            self._digests.clear()
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
                self._sizes[key] = shard.nbytes
                self._bytes += shard.nbytes
                shard.on_grow = lambda s: self._grown(key, s)
            self._evict()

    def retire(self, keys: Iterable[str]) -> None:
        """Let go of shards a commit replaced (a write's old tail, a merge's inputs): the newest
        state no longer names them, and every write makes a new tail, so an LRU alone would
        fill its budget with dead tails. A reader of an older snapshot loads one again."""
        with self._lock:
            for key in keys:
                if self._items.pop(key, None) is not None:
                    self._bytes -= self._sizes.pop(key)

    def _grown(self, key: str, shard: Shard) -> None:
        """A cached shard built FAISS structures: count them (and evict to stay in bounds)."""
        with self._lock:
            if self._items.get(key) is shard:
                size = shard.nbytes
                self._bytes += size - self._sizes[key]
                self._sizes[key] = size
                self._evict()

    def _evict(self) -> None:
        """Drop the least recently used shards past the budget (never the last one). A search
        still holding one finishes with it; its FAISS lists go with its last reference."""
        while self._bytes > self.max_bytes and len(self._items) > 1:
            old, _ = self._items.popitem(last=False)
            self._bytes -= self._sizes.pop(old)

    def _disk_path(self, key: str) -> Path | None:
        if self.disk_dir is None:
            return None
        return self.disk_dir / (disk_stem(key) + ".npz")

    def forget(self, keys: Iterable[str]) -> None:
        """Drop these shards everywhere this cache holds them: memory, their ranges, and the
        disk directory (an erasure removed the objects: memlake.erasure)."""
        keys = list(keys)
        self.retire(keys)
        self.ranges.forget(keys)
        for key in keys:
            path = self._disk_path(key)
            if path is not None:
                path.unlink(missing_ok=True)

    def keep_only(self, tenant_prefix: str, named: set[str]) -> int:
        """Drop whatever this cache holds of the tenant's objects that `named` (the keys its
        newest manifest names) leaves out: memory, ranges and disk files. Another process's
        erasure removed them (memlake.search.searcher.Searcher.settle_erasures). Returns how
        many files or shards it dropped."""
        with self._lock:
            mine = [k for k in self._items if k.startswith(tenant_prefix)]
        ranged = self.ranges.objects(tenant_prefix)  # under its own lock
        gone = [k for k in {*mine, *ranged} if k not in named]
        self.retire(gone)
        self.ranges.forget(gone)
        dropped = len(gone)
        if self.disk_dir is not None:
            keep = {disk_stem(k) for k in named}
            for path in self.disk_dir.glob(tenant_stem(tenant_prefix + "x") + "*"):
                if path.name.split("-", 1)[0].split(".", 1)[0] not in keep:
                    path.unlink(missing_ok=True)
                    dropped += 1
        return dropped

    def _to_disk(self, key: str, data: bytes) -> None:
        path = self._disk_path(key)
        if path is None or path.exists():
            return
        if write_atomically(path, data):
            trim_dir(path.parent, "*.npz", DISK_BYTES, by="st_atime")  # least recently read

    def _load(
        self, store: ObjectStore, key: str, stats: LoadStats, info: ShardInfo | None = None
    ) -> Shard:
        try:
            return self._load_or_fail(store, key, stats, info)
        except ObjectNotFound as e:
            raise missing(key) from e

    def _load_or_fail(
        self, store: ObjectStore, key: str, stats: LoadStats, info: ShardInfo | None
    ) -> Shard:
        """A ranged open checks the object's structure (directory, headers, sizes); a whole read
        checks its sha256 too, against the manifest's record (memlake.lake.checksums)."""
        hit = self.cached(key)
        if hit is not None and (info is not None or not hit.lazy):
            return hit
        expected = self._digests.get(key, "")
        if info is not None and lazy(info):
            layout = _layout(info)
            try:
                shard = Shard.from_ranges(
                    RangedNpz(
                        store, key, info.bytes, cache=self.ranges, gap=LAZY_GAP, layout=layout
                    )
                )
            except (KeyError, ValueError) as e:  # a member missing, a bad header or format
                raise bad(key, str(e)) from e
            shard.open_ivf_ahead()  # beside the other shards' reads (decision 4401)
            with self._lock:
                stats.ranged += 1
            self.add(key, shard)
            return shard
        path = self._disk_path(key)
        data: bytes | None = None
        if path is not None and path.exists():
            try:
                data = path.read_bytes()
                with self._lock:
                    stats.disk_hits += 1
            except OSError:
                data = None
        if data is not None and expected and digest(data) != expected:
            data = None  # a damaged local copy: the store's may be intact
        if data is None:
            data = verify(key, store.get(key), expected)
            with self._lock:
                stats.fetched += 1
                stats.bytes += len(data)
            self._to_disk(key, data)
        try:
            shard = Shard.from_bytes(data)
        except CorruptObject:
            raise
        except Exception as e:  # np.load of a truncated or foreign object: zip, npy, format
            raise bad(key, f"{type(e).__name__}: {e}") from e
        if hit is None:  # a writer's whole copy does not displace a search's ranged one
            self.add(key, shard)
        return shard

    def _threads(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(LOAD_THREADS, thread_name_prefix="memlake-shard")
        return self._pool

    def load_many(
        self, store: ObjectStore, keys: Sequence[str], infos: Sequence[ShardInfo] | None = None
    ) -> list[Shard]:
        """The shards for `keys`, in order; missing ones fetched in parallel. With the
        manifest's `infos` (a search), big sealed shards open by ranges; without (a writer),
        every shard is whole."""
        stats = LoadStats()
        self.expect(infos or ())
        given: Sequence[ShardInfo | None] = infos if infos is not None else [None] * len(keys)
        pairs = list(zip(keys, given, strict=True))
        loaded: dict[str, Shard] = {}
        missing = [(k, i) for k, i in pairs if self.cached(k) is None]
        if len(missing) > 1:  # in parallel; kept here, so an eviction cannot refetch them
            shards = self._threads().map(lambda p: self._load(store, p[0], stats, p[1]), missing)
            loaded = {k: s for (k, _), s in zip(missing, shards, strict=True)}
        out = [loaded.get(k) or self._load(store, k, stats, i) for k, i in pairs]
        self.last = stats
        return out

    def expect(self, infos: Sequence[ShardInfo]) -> None:
        """Remember the sha256 the manifest records for these shards: whole reads verify it."""
        with self._lock:
            for info in infos:
                if info.sha256:
                    self._digests[info.key] = info.sha256
                    self._digests.move_to_end(info.key)
            while len(self._digests) > DIGESTS_KEPT:
                self._digests.popitem(last=False)

    def promote(self, store: ObjectStore, infos: Sequence[ShardInfo]) -> None:
        """After a search over `infos`: fetch its ranged shards whole in the background when all
        of them fit (PROMOTE_SHARE of the budget). Called once the search has its answer, so
        the fetch does not compete with it."""
        if not PROMOTE or sum(map(resident, infos)) > PROMOTE_SHARE * self.max_bytes:
            return
        ranged = [i.key for i in infos if (s := self.cached(i.key)) is not None and s.lazy]
        if not ranged:
            return
        with self._lock:
            if self._promoter is None:  # one at a time: searches keep the loading threads
                self._promoter = ThreadPoolExecutor(1, thread_name_prefix="memlake-promote")
            for key in ranged:
                if key not in self._promoting:
                    self._promoting[key] = self._promoter.submit(self._swap_whole, store, key)

    def _swap_whole(self, store: ObjectStore, key: str) -> None:
        try:
            whole = self._load(store, key, LoadStats())  # no info: whole (disk, then store)
            whole.hold_lists()  # here, not in the searches after the swap
        except Exception:  # a failed promotion only keeps the ranged shard (not retried)
            return
        with self._lock:
            old = self._items.get(key)
            if old is not None and old.lazy:
                self._bytes -= self._sizes[key]
                self._items[key] = whole
                self._sizes[key] = whole.nbytes
                self._bytes += whole.nbytes
                whole.on_grow = lambda s: self._grown(key, s)
                self._evict()

    def wait_promotions(self) -> None:
        """Block until the background promotions started so far are done (tests, benches)."""
        with self._lock:
            pending = list(self._promoting.values())
        wait(pending)
