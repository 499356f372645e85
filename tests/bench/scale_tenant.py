"""A big search tenant built fast with the library's own code (tests/bench/scale_bench.py).

Filling a lake through the commit hooks 64 episodes at a time (search_bench.py) rebuilds and
re-merges shards all the way and held ~1.35 GB per 10k x 20 episodes; this builds the same end
state directly, in bounded memory:

- the shard layout the server reaches for n episodes written 64 per commit (`layout`: replayed
  with memlake.search.index.layout's own merge rule: 4,096-episode tier-2 shards, then tier-1
  (512), tier-0 (64) and the tail; and after every commit maintenance's merges,
  memlake.search.merge_policy.plan: tier-3 shards of up to 32,768 episodes), each write-path
  shard's episodes written in ONE commit on a bare lake (no hooks), so a shard's seq range is
  that commit's version (a merged shard's: its parts' commits);
- per shard, its docs as the indexing hook makes them (memlake.search.episode_docs.episode_doc:
  terms, passages, vectors) and the object and ShardInfo as the layout writes them
  (memlake.search.index.layout.Layout.seal -> memlake.search.index.shard_build.build, so a new index
  format is picked up; a merged shard: Layout.merge of them, as maintenance merges), then one
  commit of the manifest's search state;
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
from memlake.search import merge_policy
from memlake.search.episode_docs import episode_doc
from memlake.search.index import layout as shard_layout
from memlake.search.index.cache import ShardCache
from memlake.search.index.layout import Layout
from memlake.search.index.passages import Embedded
from memlake.search.index.state import EXTRA_KEY, SearchState, ShardInfo
from memlake.search.merge_policy import MergeRules
from tests.bench import search_bench

TENANT = search_bench.TENANT
PER = 20  # vectors per episode
#: the tier maintenance merges up to, as the server runs by default (MEMLAKE_SHARD_MERGE_TIER)
MERGE_TIER = 3
#: (first episode number, rows, their passage offsets, their vectors) of one shard's episodes
Sink = Callable[[int, list[dict[str, Any]], list[tuple[list[int], list[int]]], np.ndarray], None]


@dataclass(frozen=True)
class Planned:
    """One shard of a planned layout: its docs, whether it is the tail, its tier, and for a
    shard maintenance merged, the docs of the write path's shards it was made of (in order).
    A shard above tier 2 keeps the IVF lists of the shards it was merged of: `groups` says
    how many of `parts` each of those was (a partial tier-2 shard that folds made: several,
    trained anew; a shard of the write path: 1), or is empty when each was one part."""

    docs: int
    tail: bool
    tier: int = 0
    parts: tuple[int, ...] = ()
    groups: tuple[int, ...] = ()


def layout(n: int, tier: int = MERGE_TIER) -> list[Planned]:
    """The shards the server holds after n episodes written in commits of
    shard_layout.TAIL_DOCS, oldest first: the write path's merge rule replayed on stubs, and
    after every commit maintenance's merges up to `tier` (memlake.search.merge_policy.plan,
    as the serve tick runs them; 2: the write path's shards alone)."""
    rules = MergeRules.for_tier(tier)
    held: list[ShardInfo] = []
    parts: dict[str, tuple[int, ...]] = {}
    groups: dict[str, tuple[int, ...]] = {}

    def stub(docs: int, tier: int, tail: bool) -> ShardInfo:
        key = f"s{len(parts)}"
        parts[key] = ()
        return ShardInfo(key, docs, docs, 0, (0, 0), (0, 0), (), False, tier=tier, tail=tail)

    for start in range(0, n, shard_layout.TAIL_DOCS):
        docs = min(shard_layout.TAIL_DOCS, n - start)
        if held and held[-1].tail and held[-1].docs + docs <= shard_layout.TAIL_DOCS:
            held[-1] = replace(held[-1], docs=held[-1].docs + docs, chunks=held[-1].docs + docs)
            continue
        if held:
            held[-1] = replace(held[-1], tail=False, tier=shard_layout.tier_of(held[-1].docs))
        held.append(stub(docs, 0, True))
        while (plan := shard_layout.merge_plan(tuple(held))) is not None:
            a, b = plan
            total = sum(s.docs for s in held[a:b])
            held[a:b] = [stub(total, shard_layout.tier_of(total), False)]
        while (run := merge_policy.plan(tuple(held), rules)) is not None:
            inputs = held[run.start : run.end]
            merged = stub(sum(s.docs for s in inputs), run.tier, False)
            parts[merged.key] = tuple(d for s in inputs for d in parts[s.key] or (s.docs,))
            if run.tier > shard_layout.MAX_TIER:  # the inputs' lists are kept
                own = [groups.get(s.key) or (len(parts[s.key]) or 1,) for s in inputs]
                sizes = tuple(g for group in own for g in group)
                groups[merged.key] = sizes if max(sizes) > 1 else ()  # (): parts as they are
            held[run.start : run.end] = [merged]
    return [Planned(s.docs, s.tail, s.tier, parts[s.key], groups.get(s.key, ())) for s in held]


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
    tier: int = MERGE_TIER,
) -> Tenant:
    """Write n episodes x `per` vectors into `lake` (bare: no hooks) as above, in the layout
    maintenance keeps merging up to `tier` (2: the write path's shards alone); `vectors_of(shard
    number, episodes)` gives a write-path shard's (episodes * per, dim) unit rows. A merged
    shard is its write-path shards built one by one, then merged by Layout.merge as
    maintenance merges them (memlake.search.merging); their objects are deleted."""
    cache = ShardCache(max_bytes=0)  # Layout keeps what it writes warm: here only the last
    exact = ExactTop(query_vectors)
    ids: list[str] = []
    infos: list[ShardInfo] = []
    took = {"rows_s": 0.0, "vectors_s": 0.0, "shards_s": 0.0, "exact_s": 0.0, "sink_s": 0.0}
    took["merge_s"] = 0.0
    first = dim = no = 0
    planned = layout(n, tier)
    pieces = sum(len(p.parts) or 1 for p in planned)
    for shard in planned:
        made = []
        for docs in shard.parts or (shard.docs,):
            t0 = time.perf_counter()
            rows = []
            for i in range(first, first + docs):
                row = {"id": new_id(), "content": search_bench.episode_text(i)}
                row["context"] = f"c{i % 4}"
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
            made.append(writer.seal(built, tail=shard.tail))
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
            no += 1
            print(f"  shard {no}/{pieces}: {first} episodes", flush=True)
        if shard.parts:
            t0 = time.perf_counter()
            writer = Layout(ShardCache(0), lake.store, TENANT, version, model)
            grouped, at = [], 0
            for size in shard.groups:  # the folds it was made of, each trained anew
                group, at = made[at : at + size], at + size
                grouped.append(writer.merge(group, shard_layout.MAX_TIER) if size > 1 else group[0])
            infos.append(writer.merge(grouped or made, shard.tier))
            for key in {info.key for info in (*made, *grouped)}:  # all but the merged shard
                lake.store.delete(key)
            took["merge_s"] += time.perf_counter() - t0
            print(f"  merged {len(made)} shards into tier {shard.tier}", flush=True)
        else:
            infos.extend(made)

    state = SearchState(model=model, dim=dim, shards=tuple(infos))

    def publish(txn: Transaction) -> None:
        txn.extra[EXTRA_KEY] = state.to_json()

    lake.commit(TENANT, publish)
    return Tenant(root, n, ids, tuple(infos), exact, {k: round(v, 1) for k, v in took.items()})
