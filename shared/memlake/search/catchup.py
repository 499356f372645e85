"""Vectors the deferred pass embedded join the index in batches, one shard rebuild for many.

The deferred pass (memlake.search.backfill) commits the longer episode_chunks row of one episode
per step; it used to rebuild the shard holding the episode in that same commit, so N pending
episodes in one shard cost N or more rebuilds of a shard that grows with N: quadratic (1,000
long episodes imported into one 512-episode shard meant ~5,000 rebuilds of a shard of up to
700k vectors). Now a step only records what it embedded (`vector_backlog.embedded`), and this
catch-up, run by the same maintenance pass after it embeds, rebuilds a shard when

- the vectors waiting for it are at least 1/REINDEX_RATIO of those it holds (so its size grows
  geometrically between rebuilds: all its rebuilds together cost at most ~(RATIO + 1) times its
  final size), or
- nothing more is coming for it (every waiting episode of the shard is embedded in full).

A rebuild costs 60-100 us a vector here (IVF training and codes) and an embedding ~12 ms a
passage, so with RATIO 8 the catch-up adds at most a few percent to the pass (decision 2503).

The shard is built outside the commit lock from one snapshot (writes are not held up for
seconds), then swapped in by a conditional commit that checks the shard is still the one it
was built from; docs marked dead since (an update or delete meanwhile) stay dead in the new
shard. Otherwise nothing is swapped: the next run tries again and GC takes the unused object.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from memlake.episodes import TABLE
from memlake.lake import Lake, Snapshot, Transaction
from memlake.search.episode_docs import episode_doc
from memlake.search.index import backlog
from memlake.search.index.backlog import Backlog
from memlake.search.index.chunks import CHUNKS_TABLE
from memlake.search.index.passages import Embedded
from memlake.search.index.shard import Doc
from memlake.search.index.state import EXTRA_KEY, SearchState, ShardInfo
from memlake.search.indexing import Indexer
from memlake.search.searcher import Searcher

REINDEX_RATIO = 8
#: measured rebuild cost (tests/bench/catchup_bench.py): a rebuild is skipped when a deadline
#: would not leave this much time for it
REBUILD_SECONDS_PER_VECTOR = 1e-4


@dataclass
class CatchUpReport:
    shards: int = 0  # rebuilt and swapped in
    vectors: int = 0  # written by those rebuilds (their cost)
    episodes: int = 0  # whose new vectors joined the index
    waiting: int = 0  # shards with vectors waiting for a later run


@dataclass
class _Group:
    """The backlog entries whose live version sits in one shard."""

    entries: list[tuple[Backlog, int]] = field(default_factory=list)  # (entry, commit seq)
    unindexed: int = 0
    more_coming: bool = False  # some entry still has passages to embed


def due(info: ShardInfo, unindexed: int, more_coming: bool, ratio: int = REINDEX_RATIO) -> bool:
    """Whether a shard with `unindexed` vectors waiting should be rebuilt now."""
    return unindexed > 0 and (not more_coming or unindexed * ratio >= info.chunks)


def _groups(snap: Snapshot, state: SearchState, entries: list[Backlog]) -> dict[int, _Group]:
    episodes = snap.table(TABLE)
    out: dict[int, _Group] = {}
    for entry in entries:
        loc = episodes.locate(entry.id)
        pos = None if loc is None or not loc.is_live else state.shard_of_seq(loc.seq)
        if loc is None or pos is None:
            continue  # not live: the pass forgets its entry
        group = out.setdefault(pos, _Group())
        group.entries.append((entry, loc.seq))
        group.unindexed += entry.unindexed
        group.more_coming |= entry.unembedded > 0
    return out


def _docs(
    snap: Snapshot, searcher: Searcher, group: _Group
) -> tuple[list[Doc], dict[str, tuple[str, int]]]:
    """The docs of the group's episodes with every vector stored for them, and per episode
    (content hash, vectors) as built."""
    docs, used = [], {}
    model, dim = searcher.embedder.name, searcher.embedder.dim
    for entry, seq in group.entries:
        if entry.unindexed == 0:
            continue
        row = snap.table(TABLE).get(entry.id)
        found = snap.table(CHUNKS_TABLE).find(entry.id)
        if row is None or found is None or not found[0].is_live:
            continue
        chunks = found[1]
        h = searcher.content_hash(row)
        if (
            chunks.get("model") != model
            or h != chunks.get("content_hash")
            or h != entry.content_hash
        ):
            continue  # rewritten since: its own write planned the new text
        emb = Embedded.from_row(chunks, dim)
        docs.append(episode_doc(entry.id, row, seq, emb))
        used[entry.id] = (h, len(emb.vectors))
    return docs, used


def _swap(
    lake: Lake, tenant: str, built_from: ShardInfo, new: ShardInfo, used: dict[str, tuple[str, int]]
) -> bool:
    def change(txn: Transaction) -> bool:
        state = SearchState.from_extra(txn.extra)
        keys = [s.key for s in state.shards] if state is not None else []
        if state is None or built_from.key not in keys:
            return False  # rewritten meanwhile (a write into the tail, a purge, a merge)
        pos = keys.index(built_from.key)
        dead_since = tuple(d for d in state.shards[pos].dead if d not in built_from.dead)
        shards = list(state.shards)
        shards[pos] = replace(new, dead=new.dead + dead_since)
        txn.extra[EXTRA_KEY] = replace(state, shards=tuple(shards)).to_json()
        for episode_id, (h, count) in used.items():
            entry = backlog.current(txn, episode_id)
            if entry is not None and entry.content_hash == h:
                backlog.record(txn, episode_id, entry.indexed_up_to(count))
        return True

    return bool(lake.commit(tenant, change))


def catch_up(
    lake: Lake,
    searcher: Searcher,
    tenant: str,
    *,
    deadline: float | None = None,
    ratio: int = REINDEX_RATIO,
) -> CatchUpReport:
    """Rebuild the shards that are due (see the module doc) with the vectors waiting for them;
    stops before a rebuild that `deadline` (time.monotonic()) would cut short."""
    report = CatchUpReport()
    snap = lake.snapshot(tenant)
    entries = backlog.read_all(snap)
    state = SearchState.from_extra(snap.extra)
    if state is None or not any(e.unindexed for e in entries):
        return report
    writer = Indexer(searcher).writer(snap, lake.store, tenant, snap.version)
    for pos, group in sorted(_groups(snap, state, entries).items()):
        info = state.shards[pos]
        if not due(info, group.unindexed, group.more_coming, ratio):
            report.waiting += group.unindexed > 0
            continue
        cost = (info.chunks + group.unindexed) * REBUILD_SECONDS_PER_VECTOR
        if deadline is not None and time.monotonic() + cost > deadline:
            report.waiting += 1
            continue
        docs, used = _docs(snap, searcher, group)
        if not docs:
            continue
        new = writer.rebuild(info, docs)
        if _swap(lake, tenant, info, new, used):
            report.shards += 1
            report.vectors += new.chunks
            report.episodes += len(used)
        else:
            report.waiting += 1
    return report
