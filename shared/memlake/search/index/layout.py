"""How writes reshape the shard layout (the state itself: memlake.search.index.state).

Shards partition the commit versions: each holds the docs written in a contiguous range of
commits (`seq`), oldest first, and the last one, the tail, takes new writes. So the shard that
holds an old version of an episode is the one whose seq range contains that version's commit
(the episodes table index knows it): updates and deletes mark it dead there without loading
anything, and search masks dead docs out inside the search.

Layout (log-structured, like an LSM tree): the tail is rebuilt on every write that adds docs
until it holds TAIL_DOCS; then it is sealed as a tier-0 shard and a new tail starts. When
FANOUT sealed shards of one tier sit at the end, they merge into one shard of the next tier
(at most MAX_TIER: 64 -> 512 -> 4,096 episodes). A sealed shard whose dead docs pass
DEAD_FRACTION is rebuilt without them; a shard with no live doc is dropped. Bigger shards are
maintenance's (memlake.search.merging merges runs of tier-2 shards into tiers 3 and 4, off
the write path: `maintained`): a write marks their docs dead but never rebuilds them. Every
rebuild reuses stored term frequencies and vectors (nothing is re-embedded).

Episodes whose later passages are not embedded yet (docs/decisions/1041) are listed in the
`vector_backlog` table; the vectors the deferred pass adds join the shard holding the episode
in place (Layout.rebuild), in batches (memlake.search.catchup, decision 2503).

A shard of an older object format (`format`, absent: 1) is rebuilt in the current one when a
write touches it, one sealed shard per write, and by maintenance
(memlake.search.backfill.upgrade_shards): re-tokenised from the stored rows, never re-embedded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np

from memlake.ids import new_id
from memlake.lake import keys
from memlake.lake.checksums import digest
from memlake.search.index import cache as shard_cache
from memlake.search.index import npz_layout
from memlake.search.index.cache import ShardCache
from memlake.search.index.shard import Doc, Shard
from memlake.search.index.shard_build import Rows, build, docs_of
from memlake.search.index.state import SearchState, ShardInfo
from memlake.store.base import ObjectStore

TAIL_DOCS = 64
FANOUT = 8
MAX_TIER = 2
DEAD_FRACTION = 0.25
MAX_CONTEXTS = 32
#: shards of an older format than this are rebuilt: 1 has no passage postings (decision
#: 1201), 2 no IVF index (1301)
UPGRADE_BELOW = 3
UPGRADES_PER_COMMIT = 1  # older-format sealed shards rebuilt by one write


def tier_of(docs: int) -> int:
    """Size class of a sealed shard: 0 up to TAIL_DOCS, then each tier FANOUT times larger."""
    tier, size = 0, TAIL_DOCS
    while docs > size and tier < MAX_TIER:
        tier, size = tier + 1, size * FANOUT
    return tier


def merge_plan(shards: tuple[ShardInfo, ...]) -> tuple[int, int] | None:
    """(start, end) of FANOUT sealed shards of one tier (below MAX_TIER) at the end, or None."""
    sealed = [i for i, s in enumerate(shards) if not s.tail]
    if len(sealed) < FANOUT:
        return None
    run = sealed[-FANOUT:]
    if run != list(range(run[0], run[0] + FANOUT)):
        return None
    tiers = {shards[i].tier for i in run}
    if len(tiers) != 1 or next(iter(tiers)) >= MAX_TIER:
        return None
    return run[0], run[-1] + 1


def maintained(info: ShardInfo) -> bool:
    """A shard bigger than any the write path builds (a full tier MAX_TIER): maintenance
    merged it (memlake.search.merging), and only maintenance rebuilds it (decision 2501)."""
    return info.tier > MAX_TIER or info.docs > TAIL_DOCS * FANOUT**MAX_TIER


def needs_purge(info: ShardInfo) -> bool:
    return (
        not info.tail
        and info.docs > 0
        and not maintained(info)
        and len(info.dead) / info.docs > DEAD_FRACTION
    )


def outdated(info: ShardInfo) -> bool:
    """A shard in an object format without passage postings or IVF index: rebuilt by the
    layout. A format-3 shard (SQ8 codes) searches as well as a format-4 one, only slower:
    retraining its IVF in a write (seconds) is not worth it; merges and purges rewrite it."""
    return info.format < UPGRADE_BELOW


def _drain(
    items: list[tuple[Shard, np.ndarray | None]],
) -> Iterator[tuple[Shard, np.ndarray | None]]:
    """The items, each let go of as it is taken (a merge's inputs are freed as it copies them)."""
    items.reverse()
    while items:
        yield items.pop()


class Layout:
    """Applies one commit's docs to the shard layout, writing the shards it rebuilds.
    `rows` reads the stored episode rows and passages of ids, to re-tokenise the docs of an
    older-format shard (nothing is re-embedded); without it they keep episode-level terms."""

    def __init__(
        self,
        cache: ShardCache,
        store: ObjectStore,
        tenant: str,
        version: int,
        model: str,
        rows: Callable[[list[str]], Rows] | None = None,
    ) -> None:
        self.cache, self.store, self.tenant = cache, store, tenant
        self.version, self.model, self.rows = version, model, rows

    def _load(self, info: ShardInfo, drop: tuple[str, ...] = ()) -> tuple[Shard, np.ndarray | None]:
        self.cache.expect([info])
        shard = self.cache.load_many(self.store, [info.key])[0]
        gone = info.dead + drop
        keep = ~np.isin(shard.ids, list(gone)) if gone else None
        return shard, keep

    def _write(
        self,
        parts: list[ShardInfo],
        docs: list[Doc],
        *,
        tail: bool,
        drop: tuple[str, ...] = (),
        reuse_lists: bool = False,
    ) -> ShardInfo:
        loaded, old_docs = [], []
        for shard, keep in (self._load(p, drop) for p in parts):
            if shard.has_passages:
                loaded.append((shard, keep))
                continue
            live = (
                shard.id_list
                if keep is None
                else [i for i, k in zip(shard.id_list, keep, strict=True) if k]
            )
            rows = self.rows(live) if self.rows is not None else None
            old_docs.extend(docs_of(shard, keep, rows))
        docs = old_docs + list(docs)
        dim = len(docs[0].vectors[0]) if docs else loaded[0][0].dim
        data = build(docs, model=self.model, dim=dim, parts=_drain(loaded), reuse_lists=reuse_lists)
        key = keys.object_key(self.tenant, "search", f"{new_id()}.npz")
        self.store.put(key, data, if_absent=True)
        shard = Shard.from_bytes(data)
        self.cache.add(key, shard)
        seqs = [p.seq for p in parts] + [(d.seq, d.seq) for d in docs]
        contexts = sorted(shard.contexts)
        return ShardInfo(
            key=key,
            docs=shard.n,
            chunks=len(shard.vectors),
            bytes=len(data),
            sha256=digest(data),
            seq=(min(s[0] for s in seqs), max(s[1] for s in seqs)),
            time=(int(shard.t_start.min()), int(shard.t_end.max())) if shard.n else (0, 0),
            contexts=tuple(contexts) if len(contexts) <= MAX_CONTEXTS else None,
            none=bool((shard.ctx < 0).any()),
            tier=0 if tail else tier_of(shard.n),
            tail=tail,
            format=shard.format,
            arrays=_arrays_of(key, data),
        )

    def seal(self, docs: list[Doc], *, tail: bool = False) -> ShardInfo:
        """Write one new shard of `docs` alone and describe it as the layout would (a bulk
        build lays a tenant's shards out directly: tests/bench/scale_tenant.py)."""
        return self._write([], docs, tail=tail)

    def merge(self, parts: list[ShardInfo], tier: int) -> ShardInfo:
        """One sealed shard of tier `tier` holding the live docs of `parts` (adjacent, oldest
        first): maintenance's merges (memlake.search.merging), never a write's. Above
        MAX_TIER its IVF index is the union of theirs (decision 2501); a fold of the write
        path's small shards into a partial tier-1 or tier-2 one trains its own, as the write
        path's own merges do (a union of 512-doc shards' lists probed worse: decision 2515)."""
        merged = self._write(parts, [], tail=False, reuse_lists=tier > MAX_TIER)
        return replace(merged, tier=tier)

    def apply(self, state: SearchState, docs: list[Doc]) -> SearchState:
        shards = [s for s in state.shards if s.live > 0 or s.tail]
        if docs:
            tail = shards[-1] if shards and shards[-1].tail else None
            if tail is not None and tail.live + len(docs) <= TAIL_DOCS:
                shards[-1] = self._write([tail], docs, tail=True)
            else:
                if tail is not None:
                    shards[-1] = replace(tail, tail=False, tier=tier_of(tail.docs))
                shards.append(self._write([], docs, tail=True))
            while (plan := merge_plan(tuple(shards))) is not None:
                a, b = plan
                merged = self._write(shards[a:b], [], tail=False)
                shards[a:b] = [merged]
        upgrades = UPGRADES_PER_COMMIT
        for i, info in enumerate(shards):
            upgrade = upgrades > 0 and outdated(info) and not info.tail and not maintained(info)
            if needs_purge(info) or upgrade:
                upgrades -= outdated(info)
                shards[i] = self._write([info], [], tail=False)
        shards = [s for s in shards if s.live > 0]
        return replace(state, shards=tuple(shards))

    def upgrade(self, state: SearchState, limit: int) -> SearchState:
        """Rebuild up to `limit` older-format shards in the current format."""
        shards = list(state.shards)
        for i, info in enumerate(shards):
            if limit > 0 and outdated(info) and info.live > 0:
                shards[i] = self._write([info], [], tail=info.tail)
                limit -= 1
        return replace(state, shards=tuple(shards))

    def reindex(self, state: SearchState, docs: list[Doc]) -> SearchState:
        """Rebuild the shards holding `docs` (found by each doc's commit `seq`) with these
        versions of the docs in place of the ones they hold (new vectors, same episode row)."""
        by_shard: dict[int, list[Doc]] = {}
        for doc in docs:
            pos = state.shard_of_seq(doc.seq)
            if pos is not None:
                by_shard.setdefault(pos, []).append(doc)
        shards = list(state.shards)
        for pos, group in by_shard.items():
            shards[pos] = self.rebuild(shards[pos], group)
        return replace(state, shards=tuple(shards))

    def rebuild(self, info: ShardInfo, docs: list[Doc], *, reuse_lists: bool = False) -> ShardInfo:
        """One shard rewritten with these versions of some of its docs in place of the ones it
        holds (its dead docs dropped); the caller swaps it into the state. It keeps its tier
        (a merged shard stays maintenance's: memlake.search.merging). `reuse_lists`: its IVF
        lists kept (the rows left in them), not trained anew (an erasure's purge of a big
        shard: memlake.erasure.rewrite)."""
        new = self._write(
            [info], docs, tail=info.tail, drop=tuple(d.id for d in docs), reuse_lists=reuse_lists
        )
        return new if info.tail else replace(new, tier=max(new.tier, info.tier))


def _arrays_of(key: str, data: bytes) -> tuple[tuple[str, int, str, tuple[int, ...]], ...]:
    """The array table of a shard a search may open by ranges (npz_layout, decision 4401)."""
    if len(data) < shard_cache.LAZY_MIN_BYTES:
        return ()
    table = npz_layout.to_json(npz_layout.layout_of(key, data))
    return tuple((n, a, d, tuple(sh)) for n, (a, d, sh) in table.items())
