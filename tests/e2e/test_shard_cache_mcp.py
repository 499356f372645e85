"""Through /mcp, on the local lake and on S3 over real HTTP (moto's server): a server's shard
cache holds only shards its tenant's newest state names, after writes that replaced the tail
shard each time, a seal, a delete and searches in between (issue 47's soak found ~1,000 dead
tails in it after 80 s; ShardCache.retire after each commit publishes)."""

from __future__ import annotations

from typing import Any

import pytest

from memlake.search.index.state import SearchState

from .conftest import TOKENS
from .mcp_helpers import call, connect, run
from .test_search_cold_ranged import (
    TAIL,
    TENANT,
    World,
    _add_all,
    _shrunk,
    local_lake,
    s3_lake,
    server,
)


@pytest.mark.parametrize("lake", [local_lake, s3_lake], ids=["local", "s3"])
def test_the_cache_keeps_only_live_shards(lake: Any, tmp_path: Any) -> None:
    with pytest.MonkeyPatch.context() as mp:
        _shrunk(mp)
        with lake(tmp_path) as world:
            _check(world)


def _check(world: World) -> None:
    with server(world) as (url, services, _):
        cache = services.search.shards

        def live() -> set[str]:
            state = SearchState.from_extra(services.lake.snapshot(TENANT).extra)
            assert state is not None
            return {s.key for s in state.shards}

        async def go() -> None:
            async with connect(url, TOKENS[TENANT]) as client:
                for step in range(3):  # past a seal: TAIL + 4 episodes
                    await _add_all(client, world, TAIL // 2 + 2)
                    found = await call(client, "search_episodes", {"query": "tide gauge"})
                    assert not found["is_error"], found
                    assert set(cache._items) <= live(), f"step {step}"
                out = await call(client, "delete_episode", {"id": world.ids[0]})
                assert not out["is_error"], out
                assert set(cache._items) <= live()
                assert cache._items, "the newest shards stay cached"

        run(go())
