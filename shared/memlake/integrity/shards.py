"""Repairing the search index of a tenant: shards are derived from the tables, so a damaged
one is rebuilt from them (memlake.integrity.repair runs this on the repaired segment lists).

A shard holds the episodes whose commit seq falls in its range (SearchState.shard_of_seq): the
rebuilt shard holds the live ones, with the vectors their `episode_chunks` row stores (an
episode without a row of its current text is embedded again), and keeps its seq range so that
later re-indexing finds it (memlake.search.tail_rebuild, which a write also uses for an
unreadable tail shard). When episode rows were lost, every other shard marks the ids it holds
that are no longer live as dead, as a delete would.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from memlake.episodes import TABLE as EPISODES
from memlake.integrity.check import CheckReport
from memlake.lake import Lake, Snapshot
from memlake.search.index.state import SearchState, ShardInfo
from memlake.search.searcher import Searcher
from memlake.search.tail_rebuild import members_of, shard_from_tables


@dataclass
class ShardPlan:
    """What the index repair did (or, in a dry run, would do): (key, live episodes) each."""

    rebuilt: list[tuple[str, int]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    marked_dead: int = 0


class ShardRepair:
    def __init__(
        self, lake: Lake, searcher: Searcher, tenant: str, version: int, *, apply: bool
    ) -> None:
        self.lake, self.searcher, self.tenant = lake, searcher, tenant
        self.version, self.apply = version, apply
        self.plan = ShardPlan()

    def repair(
        self, state: SearchState, snap: Snapshot, check: CheckReport, episodes_lost: bool
    ) -> SearchState:
        """The search state over the repaired tables of `snap`."""
        damaged = check.damaged_keys("shard")
        if not damaged and not episodes_lost:
            return state
        episodes = snap.table(EPISODES)
        live = set(episodes.ids())
        shards: list[ShardInfo] = []
        for pos, info in enumerate(state.shards):
            if info.key in damaged:
                members = members_of(state, snap, pos)
                if not members:
                    self.plan.dropped.append(info.key)
                    continue
                self.plan.rebuilt.append((info.key, len(members)))
                rebuilt = shard_from_tables(
                    self.searcher, self.lake.store, self.tenant, self.version, snap, info, members
                )
                shards.append(rebuilt if self.apply else info)
            elif episodes_lost and self.apply:
                shards.append(self._forget_lost(info, live))
            else:
                shards.append(info)
        pending = {k: v for k, v in state.pending.items() if k in live}
        return replace(state, shards=tuple(shards), pending=pending)

    def _forget_lost(self, info: ShardInfo, live: set[str]) -> ShardInfo:
        self.searcher.shards.expect([info])
        shard = self.searcher.shards.load_many(self.lake.store, [info.key])[0]
        gone = [i for i in shard.id_list if i not in live and i not in info.dead]
        self.plan.marked_dead += len(gone)
        return replace(info, dead=info.dead + tuple(gone)) if gone else info
