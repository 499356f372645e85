"""The scale bench's bulk build (tests/bench/scale_tenant.py) makes the tenant the server would:
the same shard layout as commits through the indexing hooks with maintenance merging after
each (memlake.search.merging), shards whose seq ranges are the commits that wrote their rows
(Layout.seal, Layout.merge), so search, add_episode and delete_episode work on it as on a
tenant filled one write at a time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memlake.config import Settings
from memlake.context import Principal
from memlake.episodes import TABLE
from memlake.lake import keys
from memlake.search.hybrid import search
from memlake.search.index import layout
from memlake.search.index.state import SearchState
from memlake.search.merge_policy import MergeRules
from memlake.search.merging import merge_shards
from memlake.search.query.params import SearchParams
from memlake.store.local import LocalStore
from memlake.tools import add_episode, delete_episode
from tests.bench import scale_tenant
from tests.integration.test_search_index import HashEmbedder, make
from tests.wiring import bare_lake, indexed_context

T = scale_tenant.TENANT
PER = 3
VEC_ONLY = SearchParams(weights={"bm25": 0.0, "vector": 1.0})


@pytest.fixture
def small_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout, "TAIL_DOCS", 4)
    monkeypatch.setattr(layout, "FANOUT", 2)


def _unit_rows(no: int, docs: int) -> np.ndarray:
    x = np.random.default_rng(no).normal(size=(docs * PER, 64))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize(("fanout", "n"), [(2, 3), (2, 4), (2, 37), (2, 64), (4, 60), (4, 150)])
def test_layout_is_the_one_commits_through_the_hooks_reach(
    tmp_path: Path, small_layout: None, monkeypatch: pytest.MonkeyPatch, fanout: int, n: int
) -> None:
    # fanout 4: the write path leaves up to three tier-1 shards, which maintenance folds
    monkeypatch.setattr(layout, "FANOUT", fanout)
    lake, _ = make(tmp_path, HashEmbedder())
    for i in range(0, n, layout.TAIL_DOCS):
        count = min(layout.TAIL_DOCS, n - i)

        def change(txn, first=i, count=count):  # type: ignore[no-untyped-def]
            for j in range(first, first + count):
                txn.put(
                    TABLE, {"id": f"e{j:03d}", "content": f"word{j} shared", "created_at": None}
                )

        lake.commit(scale_tenant.TENANT, change)
        merge_shards(lake, T, rules=MergeRules.for_tier(3))  # maintenance, as the tick runs
    state = SearchState.from_extra(lake.snapshot(scale_tenant.TENANT).extra)
    assert state is not None
    planned = scale_tenant.layout(n)
    assert [(s.docs, s.tail, s.tier) for s in state.shards] == [
        (p.docs, p.tail, p.tier) for p in planned
    ]


@pytest.mark.parametrize(
    ("fanout", "n", "first", "groups"),
    [(2, 37, (16, 16), ()), (4, 200, (4,) * 32, (16, 16))],  # 4: of two folded tier-2 shards
)
def test_a_bulk_built_tenant_searches_and_takes_writes_like_a_filled_one(
    tmp_path: Path,
    small_layout: None,
    monkeypatch: pytest.MonkeyPatch,
    fanout: int,
    n: int,
    first: tuple[int, ...],
    groups: tuple[int, ...],
) -> None:
    monkeypatch.setattr(layout, "FANOUT", fanout)
    embedder = HashEmbedder()
    lake = bare_lake(LocalStore(tmp_path), dim=embedder.dim)
    planned = scale_tenant.layout(n)
    pieces = [d for p in planned for d in p.parts or (p.docs,)]  # write-path shards
    assert planned[0].tier == 3 and planned[0].parts == first  # maintenance merged them
    assert planned[0].groups == groups
    # a row of episode 1 (first shard) and of the last episode (the tail)
    probes = np.stack([_unit_rows(0, pieces[0])[5], _unit_rows(len(pieces) - 1, 1)[2]])
    tenant = scale_tenant.build(
        lake, tmp_path, n, embedder.name, _unit_rows, probes, per=PER
    )  # fmt: skip
    snap = lake.snapshot(T)
    state = SearchState.from_extra(snap.extra)
    assert state is not None and len(state.shards) == len(planned) > 2
    # the objects of the shards merged away are gone: the state names every search object
    stored = {o.key for o in lake.store.list(keys.object_key(T, "search", ""))}
    assert stored == {s.key for s in state.shards}
    assert [(s.docs, s.tier) for s in state.shards] == [(p.docs, p.tier) for p in planned]
    # every shard's seq range is the commits its episodes' rows were written in, one for a
    # shard of the write path, its parts' for a merged one
    first = 0
    for info, p in zip(state.shards, planned, strict=True):
        seqs = {snap.table(TABLE).locate(tenant.ids[e]).seq for e in range(first, first + p.docs)}
        assert (min(seqs), max(seqs)) == info.seq and len(seqs) == (len(p.parts) or 1)
        first += p.docs

    ctx = indexed_context(
        Principal(T), bare_lake(LocalStore(tmp_path), dim=64), Settings(), embedder
    )
    svc = ctx.services.search
    for q, episode in ((0, 1), (1, n - pieces[-1])):  # the last piece's first episode
        hits = search(ctx.lake, svc, T, query="x", limit=3, query_vector=probes[q], params=VEC_ONLY)
        assert hits[0].id == tenant.ids[episode] and tenant.ids[episode] in tenant.truth(q)
        assert hits[0].breakdown["vector_score"] == pytest.approx(1, abs=1e-5)
    target = tenant.ids[1]

    delete_episode.run(ctx, delete_episode.DeleteEpisodeInput(id=target))
    hits = search(ctx.lake, svc, T, query="x", limit=3, query_vector=probes[0], params=VEC_ONLY)
    assert target not in {h.id for h in hits}
    after = SearchState.from_extra(ctx.lake.snapshot(T).extra)
    assert after is not None
    holder = after.shard_of_seq(snap.table(TABLE).locate(target).seq)
    assert holder is not None and target in after.shards[holder].dead

    added = add_episode.run(ctx, add_episode.AddEpisodeInput(content="heron quarry lantern"))
    hits = search(ctx.lake, svc, T, query="heron quarry lantern", limit=3)
    assert hits[0].id == added.id
