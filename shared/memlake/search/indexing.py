"""Embedding and indexing on write, for every tool that stages episode rows.

Two hooks on the lake (installed by memlake.services for every Lake it builds):

- prepare (before segments are written): every staged episode row gets its chunk vectors,
  staged as a row of the `episode_chunks` table (one row per episode: passage offsets and
  fixed_size_list<float32, dim> vectors, readable by DuckDB/Athena like every table). Vectors are
  looked up by a hash of the model and the embedded text first: add_episode embeds before it
  commits (embed_ahead, outside the commit lock), a retried commit finds them again, and an
  update that leaves the text alone reuses the stored vectors. A write embeds at most
  Settings.embed_sync_passages passages (per tool call ahead of the commit, and per commit
  attempt over everything it stages): a longer episode commits with its first passages
  embedded and the rest pending (memlake.search.passages), for memlake.search.backfill.
- commit (after segments, before the manifest): the shard layout in Manifest.extra["search"]
  is updated and the touched shard rebuilt from stored term frequencies and vectors (see
  memlake.search.shards), its object written under tenants/<t>/search/ and named by the
  manifest, so an episode is searchable as soon as its commit is (BM25 over all its content,
  vectors over the passages embedded so far). The layout's `pending` map counts the passages
  still to embed per episode. A chunks row staged without its episode row (the deferred pass,
  or an import) re-indexes that episode in the shard that holds it.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from memlake.config import Settings
from memlake.embed.base import Embedder
from memlake.episodes import ON_DELETE, TABLE
from memlake.lake import Lake, Snapshot, Transaction
from memlake.lake.engine import CommitContext
from memlake.lake.schema import SYSTEM_FIELDS, TableSpec, register_table
from memlake.search import shards as layout
from memlake.search.cache import ShardCache
from memlake.search.index import Doc
from memlake.search.passages import Embedded, EmbeddedCache, embed_passages, plan
from memlake.search.shards import EXTRA_KEY, SearchState
from memlake.search.text import episode_terms, vector_texts
from memlake.services import LAKE_EXTENSIONS
from memlake.timeutil import now

CHUNKS_TABLE = "episode_chunks"
EMBED_CACHE = 256  # texts
EMBED_CACHE_VECTORS = 65_536  # ~100 MB at 384 dims


def _chunks_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),  # the episode id
            pa.field("model", pa.string()),
            pa.field("content_hash", pa.string()),
            pa.field("starts", pa.list_(pa.int32())),  # -1: the title/summary/tags text
            pa.field("ends", pa.list_(pa.int32())),
            pa.field("vectors", pa.list_(pa.list_(pa.float32(), dim))),  # the first k passages
            *SYSTEM_FIELDS,
        ]
    )


register_table(TableSpec(CHUNKS_TABLE, _chunks_schema))


def _drop_chunks(txn: Transaction, episode_id: str) -> None:
    # unconditional: an existence check would read every chunk segment in a cold process, and
    # a tombstone for an id that has no vectors is harmless
    txn.delete(CHUNKS_TABLE, episode_id)


ON_DELETE.append(_drop_chunks)


def _us(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return int(value.timestamp() * 1_000_000)
    return int(value)


def _set_pending(pending: dict[str, int], episode_id: str, count: int) -> None:
    if count > 0:
        pending[episode_id] = count
    else:
        pending.pop(episode_id, None)


class SearchService:
    """Per-lake search state: the embedder, loaded shards, and recently computed vectors."""

    def __init__(
        self, settings: Settings, *, embedder: Embedder | None = None, cache_bytes: int = 1 << 30
    ) -> None:
        self.settings = settings
        self._embedder = embedder
        disk = Path(settings.shard_cache_dir) if settings.shard_cache_dir else None
        self.shards = ShardCache(cache_bytes, disk)
        self._embedded = EmbeddedCache(EMBED_CACHE, EMBED_CACHE_VECTORS)

    # embedding -------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from memlake.embed import make_embedder

            cfg = self.settings
            if cfg.embedder == "bedrock":
                self._embedder = make_embedder(
                    "bedrock", model_id=cfg.bedrock_model, dimensions=cfg.bedrock_dimensions
                )
            else:
                self._embedder = make_embedder("minilm")
        return self._embedder

    def embed_query(self, text: str) -> np.ndarray:
        return self.embedder.embed([text])[0]

    def content_hash(self, row: dict[str, Any]) -> str:
        header, content = vector_texts(row)
        raw = "\0".join((self.embedder.name, str(self.embedder.dim), header, content))
        return hashlib.sha256(raw.encode()).hexdigest()

    def embed_row(
        self, row: dict[str, Any], content_hash: str | None = None, *, limit: int | None = None
    ) -> Embedded:
        """An episode row's passages with the vectors of the first `limit` of them (default
        Settings.embed_sync_passages), computed once per distinct text."""
        h = content_hash or self.content_hash(row)
        hit = self._embedded.get(h)
        if hit is not None:
            return hit
        cap = self.settings.embed_sync_passages if limit is None else limit
        return self._embedded.remember(
            embed_passages(h, plan(row, self.embedder), self.embedder, cap)
        )

    # hooks -----------------------------------------------------------------------------
    def _check(self, snap: Snapshot) -> SearchState | None:
        state = SearchState.from_extra(snap.extra)
        if state is not None:
            state.check_model(self.embedder.name, self.embedder.dim)
        return state

    def prepare(self, snap: Snapshot, txn: Transaction) -> None:
        staged = list(txn.staged_rows(TABLE))
        if not staged:
            return
        self._check(snap)
        staged_chunks = dict(txn.staged_rows(CHUNKS_TABLE))
        budget = self.settings.embed_sync_passages  # for this attempt, over all it stages
        for episode_id, row in staged:
            if row is None:
                if episode_id not in staged_chunks:
                    _drop_chunks(txn, episode_id)
                continue
            h = self.content_hash(row)
            have = staged_chunks.get(episode_id)
            if have is not None and have.get("content_hash") == h:
                continue
            old = self._stored(snap, episode_id)
            if old is not None and old.content_hash == h:
                self._embedded.remember(old)
                continue  # the text did not change: the stored vectors still hold
            emb = self._embedded.get(h)
            if emb is None:  # not embedded ahead (a retry in another process, an import)
                passages = plan(row, self.embedder)
                emb = self._embedded.remember(embed_passages(h, passages, self.embedder, budget))
                budget -= min(budget, len(passages))
            txn.put(CHUNKS_TABLE, emb.row(episode_id, self.embedder.name))

    def _stored(self, snap: Snapshot, episode_id: str) -> Embedded | None:
        """The vectors stored for an existing episode (None for a new one, without reading the
        chunks table: a new id is not in the episodes index)."""
        loc = snap.table(TABLE).index.get(episode_id)
        view = snap.table(CHUNKS_TABLE)
        if loc is None or loc[3] or not view.segments:
            return None
        loc = view.index.get(episode_id)
        if loc is None or loc[3]:
            return None
        row = view.get(episode_id)
        if row is None or row.get("model") != self.embedder.name:
            return None
        return Embedded.from_row(row, self.embedder.dim)

    def _embedded_for(
        self, ctx: CommitContext, episode_id: str, row: dict[str, Any], staged: dict[str, Any]
    ) -> Embedded:
        h = self.content_hash(row)
        hit = self._embedded.get(h)
        chunks = staged.get(episode_id)
        if chunks is not None and chunks.get("content_hash") == h:
            if hit is not None and len(hit.vectors) == len(chunks["vectors"]):
                return hit  # the same vectors, without converting the staged lists back
            return Embedded.from_row(chunks, self.embedder.dim)
        if hit is not None:
            return hit
        old = self._stored(ctx.snapshot, episode_id)
        if old is not None and old.content_hash == h:
            return old
        return self.embed_row(row, h)

    def _reindexed(
        self, ctx: CommitContext, episode_id: str, chunks: dict[str, Any]
    ) -> tuple[Doc, int] | None:
        """The doc of a live episode whose chunks row alone is staged, in the commit that
        holds its row, with the staged vectors (None when they are not of its current text)."""
        loc = ctx.snapshot.table(TABLE).index.get(episode_id)
        row = ctx.snapshot.table(TABLE).get(episode_id)
        if loc is None or row is None or chunks.get("model") != self.embedder.name:
            return None
        if chunks.get("content_hash") != self.content_hash(row):
            return None
        emb = Embedded.from_row(chunks, self.embedder.dim)
        return self._doc(episode_id, row, loc[0], emb), emb.pending

    def on_commit(self, ctx: CommitContext) -> None:
        staged = list(ctx.txn.staged_rows(TABLE))
        staged_chunks = {k: v for k, v in ctx.txn.staged_rows(CHUNKS_TABLE) if v is not None}
        ids = {episode_id for episode_id, _ in staged}
        redo = [
            hit
            for episode_id, chunks in staged_chunks.items()
            if episode_id not in ids and (hit := self._reindexed(ctx, episode_id, chunks))
        ]
        if not staged and not redo:
            return
        state = self._check(ctx.snapshot) or SearchState(self.embedder.name, self.embedder.dim)
        index = ctx.snapshot.table(TABLE).index
        old = {}
        for episode_id, _ in staged:
            loc = index.get(episode_id)
            if loc is not None and not loc[3]:
                old[episode_id] = loc[0]
        state = state.mark_dead(old)
        pending = dict(state.pending)
        docs = []
        for episode_id, row in staged:
            if row is None:
                pending.pop(episode_id, None)
                continue
            emb = self._embedded_for(ctx, episode_id, row, staged_chunks)
            docs.append(self._doc(episode_id, row, ctx.version, emb))
            _set_pending(pending, episode_id, emb.pending)
        writer = layout.Layout(
            self.shards, ctx.lake.store, ctx.tenant, ctx.version, self.embedder.name
        )
        state = writer.apply(state, docs)
        if redo:
            state = writer.reindex(state, [doc for doc, _ in redo])
            for doc, count in redo:
                _set_pending(pending, doc.id, count)
        ctx.txn.extra[EXTRA_KEY] = replace(state, pending=pending).to_json()

    def _doc(self, episode_id: str, row: dict[str, Any], seq: int, emb: Embedded) -> Doc:
        start = _us(row.get("started_at")) or _us(row.get("created_at")) or _us(now())
        end = _us(row.get("ended_at")) or start
        return Doc(
            id=episode_id,
            seq=seq,
            t_start=int(start or 0),
            t_end=int(end or 0),
            context=row.get("context"),
            terms=episode_terms(row),
            vectors=emb.doc_vectors(),
        )


# registry: one SearchService per Lake ----------------------------------------------------
_SERVICES: weakref.WeakKeyDictionary[Lake, SearchService] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


def install(lake: Lake, settings: Settings, embedder: Embedder | None = None) -> SearchService:
    """Make every commit on `lake` embed and index the episodes it writes."""
    with _REGISTRY_LOCK:
        svc = _SERVICES.get(lake)
        if svc is None:
            svc = SearchService(settings, embedder=embedder, cache_bytes=settings.cache_bytes)
            _SERVICES[lake] = svc
        if svc.prepare not in lake.prepare_hooks:
            lake.prepare_hooks.append(svc.prepare)
            lake.commit_hooks.append(svc.on_commit)
    return svc


def service_for(lake: Lake, settings: Settings) -> SearchService:
    """The lake's search service (a read-only one if the lake was built without hooks)."""
    with _REGISTRY_LOCK:
        svc = _SERVICES.get(lake)
        if svc is None:
            svc = _SERVICES[lake] = SearchService(settings, cache_bytes=settings.cache_bytes)
        return svc


def installed(lake: Lake) -> SearchService | None:
    """The lake's search service if its commits index episodes (None for a bare Lake)."""
    svc = _SERVICES.get(lake)
    return svc if svc is not None and svc.prepare in lake.prepare_hooks else None


def embed_ahead(lake: Lake, row: dict[str, Any]) -> int:
    """Compute an episode row's vectors before its commit, outside the commit lock (at most
    Settings.embed_sync_passages passages; a no-op on a lake without search hooks). Returns how
    many passages are left for the deferred pass (vectors_pending)."""
    svc = installed(lake)
    return svc.embed_row(row).pending if svc is not None else 0


def _extend(lake: Lake, settings: Settings) -> None:
    install(lake, settings)


LAKE_EXTENSIONS.append(_extend)
