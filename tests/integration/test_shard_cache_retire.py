"""A commit lets go of the index shards it replaced (issue 47's soak): every write makes a new
tail shard, and the memory cache held each old one until its byte bound (983 of 989 cached
shards were dead tails 80 s into the soak)."""

from __future__ import annotations

from pathlib import Path

from memlake.lake import Lake
from memlake.search.index.cache import ShardCache
from memlake.search.index.state import SearchState
from tests.integration.test_search_index import HashEmbedder, T, found, make, put, small_layout

__all__ = ["small_layout"]  # the fixture, used by name


def _live_keys(lake: Lake) -> set[str]:
    st = SearchState.from_extra(lake.snapshot(T).extra)
    assert st is not None
    return {s.key for s in st.shards}


def test_writes_and_merges_leave_only_live_shards_cached(
    tmp_path: Path, small_layout: None
) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    cache: ShardCache = ctx.services.search.shards
    for i in range(11):  # tails of 4, sealed shards, merges of two (FANOUT 2)
        put(lake, f"harbour tide note {i}")
        assert set(cache._items) <= _live_keys(lake), f"after write {i}"
    assert found(ctx, "harbour")  # a search after them loads what it needs again
    assert set(cache._items) <= _live_keys(lake)
    assert cache._bytes == sum(cache._sizes.values())


def test_retire_forgets_only_the_keys_it_is_given(tmp_path: Path) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    put(lake, "first")
    cache: ShardCache = ctx.services.search.shards
    kept = next(iter(cache._items))
    cache.retire(["tenants/t/search/not-cached.npz"])
    assert list(cache._items) == [kept] and cache._bytes == cache._sizes[kept]
    cache.retire([kept])
    assert not cache._items and cache._bytes == 0


def test_a_failing_cache_never_fails_a_landed_write(tmp_path: Path) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    put(lake, "first")
    cache: ShardCache = ctx.services.search.shards

    def broken(keys: object) -> None:
        raise RuntimeError("cache is broken")

    cache.retire = broken  # type: ignore[method-assign]
    episode = put(lake, "second")
    assert lake.snapshot(T).table("episodes").get(episode) is not None
