"""Embedding and indexing on write, for every tool that stages episode rows.

Two hooks on the lake (installed by memlake.services for every Lake it builds):

- prepare (before segments are written): every staged episode row gets its chunk vectors,
  staged as a row of the `episode_chunks` table (one row per episode: chunk offsets and
  fixed_size_list<float32, dim> vectors, readable by DuckDB/Athena like every table). Vectors are
  looked up by a hash of the model and the embedded text first: add_episode embeds before it
  commits (embed_ahead, outside the commit lock), a retried commit finds them again, and an
  update that leaves the text alone reuses the stored vectors.
- commit (after segments, before the manifest): the shard layout in Manifest.extra["search"]
  is updated and the touched shard rebuilt from stored term frequencies and vectors (see
  memlake.search.shards), its object written under tenants/<t>/search/ and named by the
  manifest, so an episode is searchable as soon as its commit is.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
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
from memlake.search.shards import EXTRA_KEY, SearchState
from memlake.search.text import episode_terms, vector_texts
from memlake.services import LAKE_EXTENSIONS
from memlake.timeutil import now

CHUNKS_TABLE = "episode_chunks"
CHUNK_TOKENS = 64  # with [CLS]/[SEP]; docs/decisions/0301-hybrid-search-tuning.md
CHUNK_OVERLAP = 16
CHAR_WINDOW = 2_000  # for embedders without a local tokenizer (Bedrock Titan)
EMBED_CACHE = 256


def _chunks_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),  # the episode id
            pa.field("model", pa.string()),
            pa.field("content_hash", pa.string()),
            pa.field("starts", pa.list_(pa.int32())),  # -1: the title/summary/tags text
            pa.field("ends", pa.list_(pa.int32())),
            pa.field("vectors", pa.list_(pa.list_(pa.float32(), dim))),
            *SYSTEM_FIELDS,
        ]
    )


register_table(TableSpec(CHUNKS_TABLE, _chunks_schema))


def _drop_chunks(txn: Transaction, episode_id: str) -> None:
    # unconditional: an existence check would read every chunk segment in a cold process, and
    # a tombstone for an id that has no vectors is harmless
    txn.delete(CHUNKS_TABLE, episode_id)


ON_DELETE.append(_drop_chunks)


@dataclass(frozen=True)
class Embedded:
    content_hash: str
    starts: list[int]
    ends: list[int]
    vectors: np.ndarray  # (chunks, dim) float32, unit rows

    def row(self, episode_id: str, model: str) -> dict[str, Any]:
        return {
            "id": episode_id,
            "model": model,
            "content_hash": self.content_hash,
            "starts": self.starts,
            "ends": self.ends,
            "vectors": self.vectors.tolist(),
        }


def _us(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return int(value.timestamp() * 1_000_000)
    return int(value)


class SearchService:
    """Per-lake search state: the embedder, loaded shards, and recently computed vectors."""

    def __init__(
        self, settings: Settings, *, embedder: Embedder | None = None, cache_bytes: int = 1 << 30
    ) -> None:
        self.settings = settings
        self._embedder = embedder
        disk = Path(settings.shard_cache_dir) if settings.shard_cache_dir else None
        self.shards = ShardCache(cache_bytes, disk)
        self._embedded: OrderedDict[str, Embedded] = OrderedDict()
        self._lock = threading.Lock()

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

    def _remember(self, emb: Embedded) -> Embedded:
        with self._lock:
            self._embedded[emb.content_hash] = emb
            self._embedded.move_to_end(emb.content_hash)
            while len(self._embedded) > EMBED_CACHE:
                self._embedded.popitem(last=False)
        return emb

    def _recall(self, content_hash: str) -> Embedded | None:
        with self._lock:
            return self._embedded.get(content_hash)

    def embed_row(self, row: dict[str, Any], content_hash: str | None = None) -> Embedded:
        """Chunk vectors of an episode row (computed once per distinct text)."""
        h = content_hash or self.content_hash(row)
        hit = self._recall(h)
        if hit is not None:
            return hit
        header, content = vector_texts(row)
        emb = self.embedder
        texts, starts, ends = [], [], []
        if header.strip():
            texts.append(header)
            starts.append(-1)
            ends.append(-1)
        if content.strip():
            tokenizer = getattr(emb, "raw_tokenizer", None)
            if tokenizer is not None:  # a local model: windows of exact token counts
                from memlake.embed.chunking import chunk_for_embedding

                pieces = [
                    (c.start_char, c.end_char, c.text)
                    for c in chunk_for_embedding(
                        content, tokenizer, max_tokens=CHUNK_TOKENS, overlap=CHUNK_OVERLAP
                    )
                ]
            else:
                from memlake.embed.bedrock import split_by_chars

                pieces, at = [], 0
                for piece in split_by_chars(content, CHAR_WINDOW):
                    pieces.append((at, at + len(piece), piece))
                    at += len(piece)
            for s, e, text in pieces:
                if text.strip():
                    texts.append(text)
                    starts.append(s)
                    ends.append(e)
        if texts:
            vectors = np.asarray(emb.embed(texts), dtype=np.float32)
        else:  # nothing to embed: a zero vector scores 0 against every query
            vectors, starts, ends = np.zeros((1, emb.dim), np.float32), [-1], [-1]
        return self._remember(Embedded(h, starts, ends, vectors))

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
                self._remember(old)
                continue  # the text did not change: the stored vectors still hold
            txn.put(CHUNKS_TABLE, self.embed_row(row, h).row(episode_id, self.embedder.name))

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
        vectors = np.asarray(row["vectors"], dtype=np.float32)
        return Embedded(row["content_hash"], list(row["starts"]), list(row["ends"]), vectors)

    def _vectors(self, txn: Transaction, episode_id: str, row: dict[str, Any]) -> np.ndarray:
        h = self.content_hash(row)
        hit = self._recall(h)
        if hit is not None:
            return hit.vectors
        staged = txn.get(CHUNKS_TABLE, episode_id)
        if staged is not None and staged.get("content_hash") == h:
            return np.asarray(staged["vectors"], dtype=np.float32)
        return self.embed_row(row, h).vectors

    def on_commit(self, ctx: CommitContext) -> None:
        staged = list(ctx.txn.staged_rows(TABLE))
        if not staged:
            return
        state = self._check(ctx.snapshot) or SearchState(self.embedder.name, self.embedder.dim)
        index = ctx.snapshot.table(TABLE).index
        old = {}
        for episode_id, _ in staged:
            loc = index.get(episode_id)
            if loc is not None and not loc[3]:
                old[episode_id] = loc[0]
        state = state.mark_dead(old)
        docs = [self._doc(ctx, eid, row) for eid, row in staged if row is not None]
        writer = layout.Layout(
            self.shards, ctx.lake.store, ctx.tenant, ctx.version, self.embedder.name
        )
        state = writer.apply(state, docs)
        ctx.txn.extra[EXTRA_KEY] = state.to_json()

    def _doc(self, ctx: CommitContext, episode_id: str, row: dict[str, Any]) -> Doc:
        start = _us(row.get("started_at")) or _us(row.get("created_at")) or _us(now())
        end = _us(row.get("ended_at")) or start
        return Doc(
            id=episode_id,
            seq=ctx.version,
            t_start=int(start or 0),
            t_end=int(end or 0),
            context=row.get("context"),
            terms=episode_terms(row),
            vectors=self._vectors(ctx.txn, episode_id, row),
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


def embed_ahead(lake: Lake, row: dict[str, Any]) -> None:
    """Compute an episode row's vectors before its commit, outside the commit lock (a no-op on a
    lake without search hooks)."""
    svc = _SERVICES.get(lake)
    if svc is not None and svc.prepare in lake.prepare_hooks:
        svc.embed_row(row)


def _extend(lake: Lake, settings: Settings) -> None:
    install(lake, settings)


LAKE_EXTENSIONS.append(_extend)
