"""A big search tenant built fast with the library's own code (tests/bench/scale_bench.py).

Filling a lake through the commit hooks 64 episodes at a time (search_bench.py) rebuilds and
re-merges shards all the way and held ~1.35 GB per 10k x 20 episodes; this builds the same end
state directly, in bounded memory:

- the shard layout the server's Layout reaches for n episodes written 64 per commit (`layout`:
  replayed with memlake.search.index.layout's own merge rule: 4,096-episode tier-2 shards, then
  tier-1 (512), tier-0 (64) and the tail), each shard's episodes written in ONE commit on a
  bare lake (no hooks), so a shard's seq range is that commit's version;
- per shard, its docs as the indexing hook makes them (memlake.search.indexing.episode_doc:
  terms, passages, vectors) and the object and ShardInfo as the layout writes them
  (memlake.search.index.layout.Layout.seal -> memlake.search.index.shard_build.build, so a new index
  format is picked up), then one commit of the manifest's search state;
- vectors generated shard by shard (scale_bench.py: tests/bench/vectors.py, one seed per
  shard), never held whole: the exact top-10 of every query (an episode scores its best
  row) is kept as they pass, and an optional sink (LanceDB) gets the same rows.

The tenant has no `episode_chunks` rows (vectors live in the shards only): search and
add_episode never read them for existing episodes; best-passage shaping of search_episodes and
the deferred embedding pass would, and are not what this bench measures.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from memlake.ids import new_id
from memlake.lake import Lake, Transaction
from memlake.search.index import layout as shard_layout
from memlake.search.index.cache import ShardCache
from memlake.search.index.layout import Layout
from memlake.search.index.passages import Embedded
from memlake.search.index.state import EXTRA_KEY, SearchState, ShardInfo
from memlake.search.indexing import episode_doc
from tests.bench import search_bench

TENANT = search_bench.TENANT
PER = 20  # vectors per episode
#: (first episode number, rows, their passage offsets, their vectors) of one shard's episodes
Sink = Callable[[int, list[dict[str, Any]], list[tuple[list[int], list[int]]], np.ndarray], None]


def layout(n: int) -> list[tuple[int, bool]]:
    """(docs, is the tail) of each shard the server's Layout holds after n episodes written
    in commits of shard_layout.TAIL_DOCS, oldest first (its merge rule replayed on stubs)."""
    held: list[ShardInfo] = []

    def stub(docs: int, tier: int, tail: bool) -> ShardInfo:
        return ShardInfo("", docs, docs, 0, (0, 0), (0, 0), (), False, tier=tier, tail=tail)

    for start in range(0, n, shard_layout.TAIL_DOCS):
        docs = min(shard_layout.TAIL_DOCS, n - start)
        if held and held[-1].tail and held[-1].docs + docs <= shard_layout.TAIL_DOCS:
            held[-1] = replace(held[-1], docs=held[-1].docs + docs)
            continue
        if held:
            held[-1] = replace(held[-1], tail=False, tier=shard_layout.tier_of(held[-1].docs))
        held.append(stub(docs, 0, True))
        while (plan := shard_layout.merge_plan(tuple(held))) is not None:
            a, b = plan
            total = sum(s.docs for s in held[a:b])
            held[a:b] = [stub(total, shard_layout.tier_of(total), False)]
    return [(s.docs, s.tail) for s in held]


class ExactTop:
    """The exact top-k episodes of each query over vectors seen so far (episode = best row)."""

    def __init__(self, queries: np.ndarray, k: int = 10) -> None:
        self.q = np.asarray(queries, np.float32)
        self.k = k
        self.scores = np.full((len(self.q), k), -np.inf, np.float32)
        self.episodes = np.full((len(self.q), k), -1, np.int64)

    def add(self, first: int, flat: np.ndarray, per: int) -> None:
        best = (self.q @ flat.T).reshape(len(self.q), -1, per).max(axis=2)
        numbers = np.broadcast_to(first + np.arange(best.shape[1]), best.shape)
        scores = np.concatenate([self.scores, best], axis=1)
        episodes = np.concatenate([self.episodes, numbers], axis=1)
        top = np.argpartition(-scores, self.k - 1, axis=1)[:, : self.k]
        self.scores = np.take_along_axis(scores, top, axis=1)
        self.episodes = np.take_along_axis(episodes, top, axis=1)


@dataclass
class Tenant:
    root: Path
    n: int
    ids: list[str]  # episode number -> id
    infos: tuple[ShardInfo, ...]
    exact: ExactTop
    took: dict[str, float] = field(default_factory=dict)

    def truth(self, query: int) -> set[str]:
        return {self.ids[e] for e in self.exact.episodes[query].tolist()}


def windows(text: str, n: int) -> tuple[list[int], list[int]]:
    return search_bench.windows(text, n)


def build(
    lake: Lake,
    root: Path,
    n: int,
    model: str,
    vectors_of: Callable[[int, int], np.ndarray],
    query_vectors: np.ndarray,
    sink: Sink | None = None,
    per: int = PER,
) -> Tenant:
    """Write n episodes x `per` vectors into `lake` (bare: no hooks) as above;
    `vectors_of(shard number, episodes)` gives a shard's (episodes * per, dim) unit rows."""
    cache = ShardCache(max_bytes=0)  # Layout keeps what it writes warm: here only the last
    exact = ExactTop(query_vectors)
    ids: list[str] = []
    infos: list[ShardInfo] = []
    took = {"rows_s": 0.0, "vectors_s": 0.0, "shards_s": 0.0, "exact_s": 0.0, "sink_s": 0.0}
    first = dim = 0
    sizes = layout(n)
    for no, (docs, tail) in enumerate(sizes):
        t0 = time.perf_counter()
        rows = []
        for i in range(first, first + docs):
            row = {"id": new_id(), "content": search_bench.episode_text(i), "context": f"c{i % 4}"}
            row["created_at"] = row["started_at"] = search_bench.time_of(i)
            rows.append(row)

        def change(txn: Transaction, rows: list[dict[str, Any]] = rows) -> None:
            for r in rows:
                txn.put("episodes", r)

        lake.commit(TENANT, change)
        version = lake.snapshot(TENANT).version
        ids.extend(r["id"] for r in rows)
        t1 = time.perf_counter()
        flat = np.asarray(vectors_of(no, docs), np.float32)
        dim = flat.shape[1]
        t2 = time.perf_counter()
        spans = [windows(r["content"], per) for r in rows]
        built = [
            episode_doc(r["id"], r, version, Embedded("", s, e, flat[j * per : (j + 1) * per]))
            for j, (r, (s, e)) in enumerate(zip(rows, spans, strict=True))
        ]
        writer = Layout(cache, lake.store, TENANT, version, model)
        infos.append(writer.seal(built, tail=tail))
        del built
        t3 = time.perf_counter()
        exact.add(first, flat, per)
        t4 = time.perf_counter()
        if sink is not None:
            sink(first, rows, spans, flat)
        t5 = time.perf_counter()
        for key, a, b in (("rows_s", t0, t1), ("vectors_s", t1, t2), ("shards_s", t2, t3)):
            took[key] += b - a
        took["exact_s"] += t4 - t3
        took["sink_s"] += t5 - t4
        first += docs
        print(f"  shard {no + 1}/{len(sizes)}: {first} episodes", flush=True)

    state = SearchState(model=model, dim=dim, shards=tuple(infos))

    def publish(txn: Transaction) -> None:
        txn.extra[EXTRA_KEY] = state.to_json()

    lake.commit(TENANT, publish)
    return Tenant(root, n, ids, tuple(infos), exact, {k: round(v, 1) for k, v in took.items()})
