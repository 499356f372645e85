"""Embedding and indexing on write, for every tool that stages episode rows.

Two hooks on the lake (installed by the search feature, memlake.features, on every Lake that
memlake.services builds), sharing the lake's Searcher (memlake.search.searcher) with reads:

- prepare (before segments are written): every staged episode row gets its chunk vectors,
  staged as a row of the `episode_chunks` table (one row per episode: passage offsets and
  fixed_size_list<float32, dim> vectors, readable by DuckDB/Athena like every table). Vectors are
  looked up by a hash of the model and the embedded text first: add_episode embeds before it
  commits (embed_ahead, outside the commit lock), a retried commit finds them again, and an
  update that leaves the text alone reuses the stored vectors. A write embeds at most
  Settings.embed_sync_passages passages (per tool call ahead of the commit, and per commit
  attempt over everything it stages): a longer episode commits with its first passages
  embedded and the rest pending (memlake.search.index.passages), for memlake.search.backfill.
- commit (after segments, before the manifest): the shard layout in Manifest.extra["search"]
  is updated and the touched shard rebuilt from stored term frequencies and vectors (see
  memlake.search.index.layout), its object written under tenants/<t>/search/ and named by the
  manifest, so an episode is searchable as soon as its commit is (BM25 over all its content,
  vectors over the passages embedded so far). The prepare hook also stages the episode's
  `vector_backlog` row (memlake.search.index.backlog) while some passage is not indexed. A
  chunks row staged without its episode row re-indexes that episode in the shard that holds it
  (an import), unless its backlog row says the index keeps fewer of its vectors (the deferred
  pass: memlake.search.catchup adds them in batches, decision 2503).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memlake.episodes import TABLE
from memlake.errors import ConfigurationError
from memlake.lake import Lake, Snapshot, Transaction
from memlake.lake.engine import CommitContext
from memlake.search.episode_docs import episode_doc
from memlake.search.index import backlog, layout
from memlake.search.index.backlog import Backlog
from memlake.search.index.chunks import CHUNKS_TABLE, drop_chunks
from memlake.search.index.deferred_embedding import embed_or_defer
from memlake.search.index.passages import Embedded, plan
from memlake.search.index.shard import Doc
from memlake.search.index.shard_build import Rows
from memlake.search.index.state import EXTRA_KEY, SearchState
from memlake.search.searcher import Searcher
from memlake.search.tail_rebuild import rebuilt_tail
from memlake.store.base import ObjectStore


def _deferred(entry: Backlog | None, chunks: dict[str, Any]) -> bool:
    """True when a chunks row staged alone is the deferred pass's: its backlog entry says the
    index keeps fewer of its vectors (memlake.search.catchup adds them in batches)."""
    return entry is not None and entry.indexed < len(chunks.get("vectors") or ())


class Indexer:
    """The commit hooks of one lake, embedding through its Searcher."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher

    def _check(self, snap: Snapshot, txn: Transaction | None = None) -> SearchState | None:
        """The search state the commit builds on: the transaction's, which holds what other
        changes of a group commit staged there (a catch-up's or merge's swap), else the
        snapshot's."""
        state = SearchState.from_extra(snap.extra if txn is None else txn.extra)
        if state is not None:
            state.check_model(self.searcher.embedder.name, self.searcher.embedder.dim)
        return state

    def prepare(self, snap: Snapshot, txn: Transaction) -> None:
        staged = list(txn.staged_rows(TABLE))
        staged_chunks = dict(txn.staged_rows(CHUNKS_TABLE))
        if not staged and not staged_chunks:
            return
        self._check(snap)
        budget = self.searcher.settings.embed_sync_passages  # for this attempt, over all it stages
        entries = backlog.staged_entries(txn)
        for episode_id, row in staged:
            if row is None:
                if episode_id not in staged_chunks:
                    drop_chunks(txn, episode_id)
                backlog.record(txn, episode_id, None)
                continue
            h = self.searcher.content_hash(row)
            have = staged_chunks.get(episode_id)
            if have is not None and have.get("content_hash") == h:
                if episode_id not in entries:  # an import: the doc is built from these vectors
                    given = Embedded.from_row(have, self.searcher.embedder.dim)
                    backlog.record(txn, episode_id, Backlog.of(episode_id, given))
                continue
            old = self._stored(snap, episode_id)
            if old is not None and old.content_hash == h:
                self.searcher.embedded.remember(old)
                # the text did not change: the stored vectors still hold, and the new doc
                # (in the tail) is built from all of them
                backlog.record(txn, episode_id, Backlog.of(episode_id, old))
                continue
            emb = self.searcher.embedded.get(h)
            if emb is None:  # not embedded ahead (a retry in another process, an import)
                passages = plan(row, self.searcher.embedder)
                emb = self.searcher.embedded.remember(  # a write: never waits on the embedder
                    embed_or_defer(h, passages, self.searcher.embedder, budget)
                )
                budget -= min(budget, len(passages))
            txn.put(CHUNKS_TABLE, emb.row(episode_id, self.searcher.embedder.name))
            backlog.record(txn, episode_id, Backlog.of(episode_id, emb))
        rows = dict(staged)
        for episode_id, chunks in staged_chunks.items():
            # a chunks row alone: the deferred pass stages its entry itself; an import's is
            # indexed by the commit hook in full (_reindexed)
            if episode_id in rows or episode_id in entries or chunks is None:
                continue
            if chunks.get("model") == self.searcher.embedder.name:
                given = Embedded.from_row(chunks, self.searcher.embedder.dim)
                backlog.record(txn, episode_id, Backlog.of(episode_id, given))

    def _stored(self, snap: Snapshot, episode_id: str) -> Embedded | None:
        """The vectors stored for an existing episode (None for a new one, without reading the
        chunks table: a new id is not in the episodes index)."""
        loc = snap.table(TABLE).locate(episode_id)
        view = snap.table(CHUNKS_TABLE)
        if loc is None or not loc.is_live or not view.segments:
            return None
        loc = view.locate(episode_id)
        if loc is None or not loc.is_live:
            return None
        row = view.get(episode_id)
        if row is None or row.get("model") != self.searcher.embedder.name:
            return None
        return Embedded.from_row(row, self.searcher.embedder.dim)

    def _embedded_for(
        self, ctx: CommitContext, episode_id: str, row: dict[str, Any], staged: dict[str, Any]
    ) -> Embedded:
        h = self.searcher.content_hash(row)
        hit = self.searcher.embedded.get(h)
        chunks = staged.get(episode_id)
        if chunks is not None and chunks.get("content_hash") == h:
            if hit is not None and len(hit.vectors) == len(chunks["vectors"]):
                return hit  # the same vectors, without converting the staged lists back
            return Embedded.from_row(chunks, self.searcher.embedder.dim)
        if hit is not None:
            return hit
        old = self._stored(ctx.snapshot, episode_id)
        if old is not None and old.content_hash == h:
            return old
        return self.searcher.embed_row(row, h, defer=True)

    def _reindexed(self, ctx: CommitContext, episode_id: str, chunks: dict[str, Any]) -> Doc | None:
        """The doc of a live episode whose chunks row alone is staged, in the commit that
        holds its row, with the staged vectors (None when they are not of its current text)."""
        loc = ctx.snapshot.table(TABLE).locate(episode_id)
        row = ctx.snapshot.table(TABLE).get(episode_id)
        if loc is None or row is None or chunks.get("model") != self.searcher.embedder.name:
            return None
        if chunks.get("content_hash") != self.searcher.content_hash(row):
            return None
        emb = Embedded.from_row(chunks, self.searcher.embedder.dim)
        return episode_doc(episode_id, row, loc.seq, emb)

    def on_commit(self, ctx: CommitContext) -> None:
        staged = list(ctx.txn.staged_rows(TABLE))
        staged_chunks = {k: v for k, v in ctx.txn.staged_rows(CHUNKS_TABLE) if v is not None}
        ids = {episode_id for episode_id, _ in staged}
        entries = backlog.staged_entries(ctx.txn)
        redo = [
            hit
            for episode_id, chunks in staged_chunks.items()
            if episode_id not in ids
            and not _deferred(entries.get(episode_id), chunks)
            and (hit := self._reindexed(ctx, episode_id, chunks))
        ]
        if not staged and not redo:
            return
        state = self._check(ctx.snapshot, ctx.txn) or SearchState(
            self.searcher.embedder.name, self.searcher.embedder.dim
        )
        episodes = ctx.snapshot.table(TABLE)
        old = {}
        for episode_id, _ in staged:
            loc = episodes.locate(episode_id)
            if loc is not None and loc.is_live:
                old[episode_id] = loc.seq
        # an unreadable tail is rebuilt from the tables first: the ids this commit replaces
        # are then marked dead in the rebuilt one
        state = rebuilt_tail(ctx.lake, self.searcher, ctx.tenant, ctx.version, state, ctx.snapshot)
        state = state.mark_dead(old)
        docs = []
        for episode_id, row in staged:
            if row is not None:
                emb = self._embedded_for(ctx, episode_id, row, staged_chunks)
                docs.append(episode_doc(episode_id, row, ctx.version, emb))
        writer = self.writer(ctx.snapshot, ctx.lake.store, ctx.tenant, ctx.version)
        state = writer.apply(state, docs)
        if redo:
            state = writer.reindex(state, redo)
        # a state written before the backlog table keeps its map for the episodes this commit
        # does not touch (their entries are in the table now)
        touched = ids | {doc.id for doc in redo}
        pending = {k: v for k, v in state.pending.items() if k not in touched}
        ctx.txn.extra[EXTRA_KEY] = replace(state, pending=pending).to_json()

    def on_published(self, prev: Snapshot, new: Snapshot) -> None:
        """The shards `prev` named and `new` does not leave the memory cache (ShardCache.retire):
        a commit replaced them, and only readers of an older snapshot could still use one."""
        if prev.extra.get(EXTRA_KEY) is new.extra.get(EXTRA_KEY):
            return  # no index change (compaction keeps the extra)
        try:
            before, after = _search_state(prev), _search_state(new)
        except ConfigurationError:
            return  # a format this process does not search: nothing of it is cached
        if before is not None:
            kept = {s.key for s in after.shards} if after is not None else set()
            self.searcher.shards.retire(s.key for s in before.shards if s.key not in kept)

    def writer(
        self, snap: Snapshot, store: ObjectStore, tenant: str, version: int
    ) -> layout.Layout:
        """The shard layout writer of a commit onto `snap` (the write hook, the deferred pass's
        upgrades and catch-up): it re-tokenises older-format shards from `snap`'s rows."""
        return layout.Layout(
            self.searcher.shards,
            store,
            tenant,
            version,
            self.searcher.embedder.name,
            rows=lambda ids: self.stored_rows(snap, ids),
        )

    def stored_rows(self, snap: Snapshot, ids: list[str]) -> Rows:
        """Episode rows and stored passages of `ids` (for re-tokenising an older shard)."""
        episodes, chunks = snap.table(TABLE), snap.table(CHUNKS_TABLE)
        few = len(ids) <= 64  # a few: read their segments; many: index the table once
        out = {}
        for episode_id in ids:
            row = episodes.get(episode_id)
            if row is None or not chunks.segments:
                continue
            found = chunks.find(episode_id) if few else None
            stored = (found[1] if found and found[0].is_live else None) if few else None
            if not few:
                stored = chunks.get(episode_id)
            if stored is None or stored.get("content_hash") != self.searcher.content_hash(row):
                continue
            count = len(stored.get("vectors") or [])
            out[episode_id] = (row, list(stored["starts"]), list(stored["ends"]), count)
        return out


def _search_state(snap: Snapshot) -> SearchState | None:
    """The snapshot's search state, parsed once for it (a search's parse too: search.hybrid)."""
    return snap.derived("search_state", lambda: SearchState.from_extra(snap.extra))


def install(lake: Lake, searcher: Searcher) -> Indexer:
    """Make every commit on `lake` embed and index the episodes it writes (the search feature's
    install; tests call it on a bare Lake)."""
    indexer = Indexer(searcher)
    lake.prepare_hooks.append(indexer.prepare)
    lake.commit_hooks.append(indexer.on_commit)
    lake.published_hooks.append(indexer.on_published)
    searcher.indexing = True
    return indexer


def embed_ahead(searcher: Searcher, row: dict[str, Any]) -> int:
    """Compute an episode row's vectors before its commit, outside the commit lock (at most
    Settings.embed_sync_passages passages; a no-op when the lake's commits do not index).
    Returns how many passages are left for the deferred pass (vectors_pending)."""
    return searcher.embed_row(row, defer=True).pending if searcher.indexing else 0
