"""Repairing the search index of a tenant: shards are derived from the tables, so a damaged
one is rebuilt from them (memlake.integrity.repair runs this on the repaired segment lists).

A shard holds the episodes whose commit seq falls in its range (SearchState.shard_of_seq): the
rebuilt shard holds the live ones, with the vectors their `episode_chunks` row stores (an
episode without a row of its current text is embedded again), and keeps its seq range so that
later re-indexing finds it. When episode rows were lost, every other shard marks the ids it
holds that are no longer live as dead, as a delete would.

A damaged *tail* shard is rebuilt the same way by the next write (`rebuilt_tail`, issue 47),
since every write rebuilds the tail: without it the tenant refused writes until repaired.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

from memlake.episodes import TABLE as EPISODES
from memlake.errors import CorruptObject
from memlake.integrity.check import CheckReport
from memlake.lake import Lake, Snapshot
from memlake.lake.snapshot import TableView
from memlake.search.index import layout
from memlake.search.index.chunks import CHUNKS_TABLE
from memlake.search.index.passages import Embedded
from memlake.search.index.state import SearchState, ShardInfo
from memlake.search.indexing import episode_doc
from memlake.search.searcher import Searcher

log = logging.getLogger("memlake.integrity")


@dataclass
class ShardPlan:
    """What the index repair did (or, in a dry run, would do): (key, live episodes) each."""

    rebuilt: list[tuple[str, int]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    marked_dead: int = 0


class ShardRepair:
    def __init__(
        self,
        lake: Lake,
        searcher: Searcher,
        tenant: str,
        version: int,
        *,
        apply: bool,
        defer: bool = False,
    ) -> None:
        self.lake, self.searcher, self.tenant = lake, searcher, tenant
        self.version, self.apply = version, apply
        self.defer = defer  # a write's: episodes without stored vectors wait on no embedder
        self.plan = ShardPlan()

    def repair(
        self, state: SearchState, snap: Snapshot, check: CheckReport, episodes_lost: bool
    ) -> SearchState:
        """The search state over the repaired tables of `snap`."""
        return self.rebuild(state, snap, check.damaged_keys("shard"), episodes_lost)

    def rebuild(
        self,
        state: SearchState,
        snap: Snapshot,
        damaged: Collection[str],
        episodes_lost: bool = False,
    ) -> SearchState:
        """The search state with the shards of `damaged` keys rebuilt from `snap`'s tables."""
        if not damaged and not episodes_lost:
            return state
        episodes = snap.table(EPISODES)
        live = set(episodes.ids())
        shards: list[ShardInfo] = []
        for pos, info in enumerate(state.shards):
            if info.key in damaged:
                members = [
                    (rid, seq)
                    for rid, (seq, _seg, _row, dead) in episodes.index.items()
                    if not dead and state.shard_of_seq(seq) == pos
                ]
                if not members:
                    self.plan.dropped.append(info.key)
                    continue
                self.plan.rebuilt.append((info.key, len(members)))
                shards.append(self._rebuilt(snap, info, members) if self.apply else info)
            elif episodes_lost and self.apply:
                shards.append(self._forget_lost(info, live))
            else:
                shards.append(info)
        pending = {k: v for k, v in state.pending.items() if k in live}
        return replace(state, shards=tuple(shards), pending=pending)

    def _embedded(self, chunks: TableView, episode_id: str, row: dict[str, Any]) -> Embedded:
        searcher = self.searcher
        h = searcher.content_hash(row)
        stored = chunks.get(episode_id) if chunks.segments else None
        model = searcher.embedder.name
        if stored and stored.get("content_hash") == h and stored.get("model") == model:
            return Embedded.from_row(stored, searcher.embedder.dim)
        return searcher.embed_row(row, h, defer=self.defer)

    def _rebuilt(
        self, snap: Snapshot, info: ShardInfo, members: list[tuple[str, int]]
    ) -> ShardInfo:
        episodes, chunks = snap.table(EPISODES), snap.table(CHUNKS_TABLE)
        docs = []
        for rid, seq in members:
            row = episodes.get(rid)
            if row is not None:
                docs.append(episode_doc(rid, row, seq, self._embedded(chunks, rid, row)))
        writer = layout.Layout(
            self.searcher.shards,
            self.lake.store,
            self.tenant,
            self.version,
            self.searcher.embedder.name,
        )
        return replace(writer.seal(docs, tail=info.tail), seq=info.seq)

    def _forget_lost(self, info: ShardInfo, live: set[str]) -> ShardInfo:
        self.searcher.shards.expect([info])
        shard = self.searcher.shards.load_many(self.lake.store, [info.key])[0]
        gone = [i for i in shard.id_list if i not in live and i not in info.dead]
        self.plan.marked_dead += len(gone)
        return replace(info, dead=info.dead + tuple(gone)) if gone else info


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
        repair = ShardRepair(lake, searcher, tenant, version, apply=True, defer=True)
        state = repair.rebuild(state, snap, {tail.key})
        live = repair.plan.rebuilt[0][1] if repair.plan.rebuilt else 0
        log.warning(
            "the tail index shard of tenant %s was unreadable (%s); this write rebuilt it from"
            " the tables (%d live episodes)",
            tenant,
            e.message,
            live,
        )
    return state
