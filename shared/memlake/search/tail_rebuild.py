"""An index shard built again from the tables (a repair's damaged shard, a write's unreadable
tail): shards are derived data, so the episodes of a shard's seq range
(SearchState.shard_of_seq) are indexed again, live ones only, with the vectors their
`episode_chunks` row stores (an episode without a row of its current text is embedded
again, or left pending by a write, which waits on no embedder), and the rebuilt shard keeps
the seq range so that later re-indexing finds it.

Every write rebuilds the tail shard, so an unreadable tail refused writes until `memlake
repair` (decision 2701); a write now rebuilds it first (`rebuilt_tail`, issue 47).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from memlake.episodes import TABLE as EPISODES
from memlake.errors import CorruptObject
from memlake.lake import Lake, Snapshot
from memlake.lake.snapshot import TableView
from memlake.search.episode_docs import episode_doc
from memlake.search.index import layout
from memlake.search.index.chunks import CHUNKS_TABLE
from memlake.search.index.passages import Embedded
from memlake.search.index.state import SearchState, ShardInfo
from memlake.search.searcher import Searcher
from memlake.store.base import ObjectStore

log = logging.getLogger("memlake.search")


def members_of(state: SearchState, snap: Snapshot, pos: int) -> list[tuple[str, int]]:
    """(id, seq) of the live episodes whose commit falls in shard `pos`'s seq range."""
    return [
        (rid, seq)
        for rid, (seq, _seg, _row, dead) in snap.table(EPISODES).index.items()
        if not dead and state.shard_of_seq(seq) == pos
    ]


def shard_from_tables(
    searcher: Searcher,
    store: ObjectStore,
    tenant: str,
    version: int,
    snap: Snapshot,
    info: ShardInfo,
    members: list[tuple[str, int]],
    *,
    defer: bool = False,
) -> ShardInfo:
    """A new shard in `info`'s place holding `members` (live episodes of its seq range)."""
    episodes, chunks = snap.table(EPISODES), snap.table(CHUNKS_TABLE)
    docs = []
    for rid, seq in members:
        row = episodes.get(rid)
        if row is not None:
            emb = _embedded(searcher, chunks, rid, row, defer)
            docs.append(episode_doc(rid, row, seq, emb))
    writer = layout.Layout(searcher.shards, store, tenant, version, searcher.embedder.name)
    return replace(writer.seal(docs, tail=info.tail), seq=info.seq)


def _embedded(
    searcher: Searcher, chunks: TableView, episode_id: str, row: dict[str, Any], defer: bool
) -> Embedded:
    h = searcher.content_hash(row)
    stored = chunks.get(episode_id) if chunks.segments else None
    model = searcher.embedder.name
    if stored and stored.get("content_hash") == h and stored.get("model") == model:
        return Embedded.from_row(stored, searcher.embedder.dim)
    return searcher.embed_row(row, h, defer=defer)


def rebuilt_tail(
    lake: Lake, searcher: Searcher, tenant: str, version: int, state: SearchState, snap: Snapshot
) -> SearchState:
    """`state` with its tail shard rebuilt from `snap`'s tables when the tail cannot be read
    (damaged, truncated, missing): what a write does before it adds to the tail."""
    tail = state.shards[-1] if state.shards and state.shards[-1].tail else None
    if tail is None:
        return state
    try:
        searcher.shards.expect([tail])
        searcher.shards.load_many(lake.store, [tail.key])
    except CorruptObject as e:
        members = members_of(state, snap, len(state.shards) - 1)
        if members:
            rebuilt = shard_from_tables(
                searcher, lake.store, tenant, version, snap, tail, members, defer=True
            )
            shards = (*state.shards[:-1], rebuilt)
        else:
            shards = state.shards[:-1]
        log.warning(
            "the tail index shard of tenant %s was unreadable (%s); this write rebuilt it from"
            " the tables (%d live episodes)",
            tenant,
            e.message,
            len(members),
        )
        state = replace(state, shards=tuple(shards))
    return state
