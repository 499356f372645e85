"""RangeCache: the bytes RangedNpz fetched, kept in memory (LRU by bytes) and in a directory, so a
warm reader (or a new process on the same /tmp) asks the store nothing; its stats count it."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from memlake.search.index import range_cache
from memlake.search.index.range_cache import RangeCache, RangeStats
from memlake.search.index.ranges import RangedNpz, Slice
from memlake.store.local import LocalStore
from tests.support.counting import CountingStore

KEY = "tenants/t/shards/s.npz"
VECTORS = np.arange(2000 * 64, dtype=np.float32).reshape(2000, 64)
WANT = [Slice("vectors", 10, 20), Slice("vectors", 1500, 1600), Slice("ids")]


@pytest.fixture
def store(tmp_path: Path) -> CountingStore:
    sink = io.BytesIO()
    np.savez(sink, ids=np.arange(3000, dtype=np.int64), vectors=VECTORS)
    inner = LocalStore(tmp_path / "lake")
    inner.put(KEY, sink.getvalue())
    return CountingStore(inner)


def read(store: CountingStore, cache: RangeCache) -> list[np.ndarray]:
    return RangedNpz(store, KEY, store.size(KEY), cache=cache).many(WANT)


def test_a_warm_reader_asks_the_store_nothing(store: CountingStore) -> None:
    cache = RangeCache(max_bytes=1 << 20)
    first = read(store, cache)
    fetched = cache.reset()
    assert fetched.misses == 5 and fetched.hits == 0  # tail, vectors' header, three ranges
    assert fetched.requests == store.counts["get_range"] and fetched.bytes_fetched > 25_600 + 24_000
    store.reset()
    again = read(store, cache)  # a new reader: the tail, header and slices are all cached
    assert store.counts["get_range"] == 0
    assert cache.reset() == RangeStats(hits=5)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(again[1], VECTORS[1500:1600])


def test_memory_is_bounded_by_bytes_least_recently_used_first(store: CountingStore) -> None:
    cache = RangeCache(max_bytes=25_000)
    a, b, c = ("k", 0, 10_000), ("k", 10_000, 20_000), ("k", 20_000, 35_000)
    cache.add(a, bytes(10_000))
    cache.add(b, bytes(10_000))
    assert cache.lookup(a) is not None  # a is now the most recently used
    cache.add(c, bytes(15_000))  # 35 KB > 25 KB: b goes, not a
    assert cache.lookup(b) is None and cache.lookup(a) and cache.lookup(c)
    assert cache.nbytes == 25_000 and cache.stats == RangeStats(hits=3, misses=1)
    cache.add(("k", 0, 30_000), bytes(30_000))  # larger than the whole budget: not kept
    assert cache.nbytes == 25_000

    read(store, cache)
    assert cache.nbytes <= 25_000
    nothing = RangeCache(max_bytes=0)
    read(store, nothing)
    assert nothing.nbytes == 0 and nothing.stats.hits == 0


def test_a_new_process_reads_the_directory_not_the_store(
    store: CountingStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read(store, RangeCache(max_bytes=0, disk_dir=tmp_path / "tmp"))  # memory keeps nothing
    store.reset()
    later = RangeCache(max_bytes=1 << 20, disk_dir=tmp_path / "tmp")  # empty memory, same /tmp
    got = read(store, later)
    assert store.counts["get_range"] == 0 and later.stats.disk_hits == 5
    np.testing.assert_array_equal(got[0], VECTORS[10:20])
    assert read(store, later) and later.stats.hits == 5  # then from memory

    monkeypatch.setattr(range_cache, "DISK_BYTES", 30_000)
    small = RangeCache(max_bytes=0, disk_dir=tmp_path / "small")
    read(store, small)
    assert sum(p.stat().st_size for p in (tmp_path / "small").glob("*.range")) <= 30_000


def test_a_damaged_disk_entry_is_a_miss(store: CountingStore, tmp_path: Path) -> None:
    read(store, RangeCache(max_bytes=0, disk_dir=tmp_path / "tmp"))
    for path in (tmp_path / "tmp").glob("*.range"):
        path.write_bytes(path.read_bytes()[:-1])  # a torn write from another process
    cache = RangeCache(max_bytes=0, disk_dir=tmp_path / "tmp")
    store.reset()
    got = read(store, cache)
    assert cache.stats.disk_hits == 0 and store.counts["get_range"] > 0
    np.testing.assert_array_equal(got[1], VECTORS[1500:1600])


@pytest.mark.parametrize("on_disk", [False, True])
def test_many_ranges_looked_up_at_once_are_each_a_hit_or_a_miss(
    tmp_path: Path, on_disk: bool
) -> None:
    """lookup_many answers each key as lookup does, in order, and counts every hit and miss."""
    cache = RangeCache(max_bytes=1 << 20, disk_dir=tmp_path / "ranges" if on_disk else None)
    keys = [(KEY, i * 10, i * 10 + 4) for i in range(6)]
    for key in keys[::2]:
        cache.add(key, bytes([key[1]]) * 4, memory=not on_disk)
    cache.reset()
    got = cache.lookup_many(keys)
    assert got == [bytes([k[1]]) * 4 if i % 2 == 0 else None for i, k in enumerate(keys)]
    stats = cache.reset()
    assert (stats.hits + stats.disk_hits, stats.misses) == (3, 3)
    assert cache.lookup_many(keys[:1]) == [bytes([0]) * 4] and cache.reset().hits == 1
