"""The write path's small shards folded by maintenance (decision 2515), as a user meets them: on
the local lake (the serve tick's policy, one merge a pass) and on S3 over real HTTP (moto's
server; the scheduled pass's policy, every merge due), episodes written through /mcp leave
tier-1 and tier-0 shards, maintenance folds them into a partial tier-2 and a partial tier-1
shard, and a fresh server finds through /mcp what the server before the folds found.

Sizes are shrunk in-process as in test_search_cold_ranged (tails of 4 episodes, fanout 4: tiers
of 4, 16 and 64; an IVF from 64 rows), so 60 episodes of real MiniLM passages make three
tier-1 shards, two tier-0 ones and the tail."""

from __future__ import annotations

from typing import Any

import pytest

from memlake.maintenance import maintain_tenant, maintenance_policy
from memlake.search.index import ivf, ivf_codes, layout
from memlake.search.index.state import SearchState
from memlake.services import Services

from .conftest import TOKENS
from .mcp_helpers import call, connect, run
from .test_search_cold_ranged import (
    CONTEXTS,
    NEEDLE,
    TENANT,
    World,
    _add_all,
    _shrunk,
    local_lake,
    s3_lake,
    server,
)

EPISODES = 60
QUERIES = {
    "needle": {"query": "Oyelaran", "limit": 5, "recency": False},
    "meaning": {"query": "who fixed the wind speed instrument?", "limit": 5, "recency": False},
    "context": {"query": "the tide gauge", "context": CONTEXTS[1], "limit": 50, "recency": False},
}


def _shape(services: Services) -> list[tuple[int, int]]:
    state = SearchState.from_extra(services.lake.snapshot(TENANT).extra)
    assert state is not None
    return [(s.docs, s.tier) for s in state.shards]


async def _search(url: str) -> dict[str, list[str]]:
    async with connect(url, TOKENS[TENANT]) as client:
        out = {}
        for name, args in QUERIES.items():
            got = await call(client, "search_episodes", args)
            assert not got["is_error"], got
            out[name] = [h["id"] for h in got["episodes"]]
        return out


@pytest.fixture(scope="module", params=[local_lake, s3_lake], ids=["local", "s3"])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with pytest.MonkeyPatch.context() as mp:
        _shrunk(mp)
        mp.setattr(layout, "TAIL_DOCS", 4)
        mp.setattr(layout, "FANOUT", 4)
        mp.setattr(ivf, "WEIGHT_DOCS", 64)
        mp.setattr(ivf_codes, "PQ_MIN_ROWS", 32)  # PQ codes, as real tenants have
        with request.param(tmp_path_factory.mktemp("folds")) as w:
            yield w


def test_maintenance_folds_the_small_shards_and_search_finds_the_same(world: World) -> None:
    # GIVEN 60 episodes written through /mcp, one a call
    with server(world) as (url, services, _):

        async def write() -> None:
            async with connect(url, TOKENS[TENANT]) as client:
                await _add_all(client, world, EPISODES)

        run(write())
        assert _shape(services) == [(16, 1)] * 3 + [(4, 0)] * 3
        before = run(_search(url))
        # WHEN maintenance runs as the door of this store runs it, until nothing is due
        door = "tick" if world.settings.store == "local" else "scheduled"
        policy = maintenance_policy(world.settings, door)
        folds = 0
        while (report := maintain_tenant(services, TENANT, policy)).merged is not None:
            assert not report.merge_failed
            if not report.merged.merged:
                break
            folds += report.merged.merged
        # THEN a partial tier-2 shard holds the tier-1 shards' episodes, a partial tier-1
        # one the two tier-0 ones'
        assert folds == 2
        assert _shape(services) == [(48, 2), (8, 1), (4, 0)]
    # AND a fresh server finds through /mcp what the one before the folds found
    with server(world) as (url, _, _):
        after = run(_search(url))
    assert after["needle"][0] == after["meaning"][0] == world.ids[NEEDLE]
    assert before["needle"][0] == before["meaning"][0] == world.ids[NEEDLE]
    in_context = {world.ids[i] for i in range(1, EPISODES, 2)}
    assert set(after["context"]) == set(before["context"]) == in_context
