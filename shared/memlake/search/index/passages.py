"""An episode's passages and their vectors, and how many of them are not embedded yet.

The passages of an episode are the title/summary/tags text (start and end -1), when it has one,
then its content cut on speaker turns and sentences (memlake.embed.turns: a few whole turns per
passage, consecutive passages sharing one turn; CHUNK_TOKENS word pieces for a local model,
CHAR_WINDOW characters for Bedrock). Its `episode_chunks` row holds the offsets of EVERY
passage (`starts`, `ends`) and the vectors of the first k of them, in order (k <= passages):

    vectors[i] embeds passage i;  passages k.. are pending (vectors_pending = passages - k)

A write embeds at most Settings.embed_sync_passages passages (docs/decisions/1041); the
deferred pass (memlake.search.backfill) embeds the rest, in order, in later commits. A text
with nothing to embed stores one zero vector (it scores 0 against every query).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from memlake.embed.base import Embedder
from memlake.embed.turns import CharMeasure, Measure, TokenMeasure, spans
from memlake.search.index.text import vector_texts

CHUNK_TOKENS = 64  # with [CLS]/[SEP]; docs/decisions/1205-turn-aware-passages.md
CHAR_WINDOW = 2_000  # for embedders without a local tokenizer (Bedrock Titan)
HEADER = -1  # start/end of the title/summary/tags passage


@dataclass(frozen=True)
class Passage:
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Embedded:
    content_hash: str
    starts: list[int]
    ends: list[int]
    vectors: np.ndarray  # (k, dim) float32 unit rows: the first k passages

    @property
    def pending(self) -> int:
        """Passages not embedded yet."""
        return len(self.starts) - len(self.vectors)

    def doc_vectors(self) -> np.ndarray:
        """The vectors a shard indexes: at least one row (a zero row while none is embedded)."""
        if len(self.vectors):
            return self.vectors
        return np.zeros((1, self.vectors.shape[1]), np.float32)

    def extended(self, more: np.ndarray) -> Embedded:
        """These vectors followed by the next passages' (`more` rows)."""
        vectors = np.concatenate([self.vectors, np.asarray(more, np.float32)])
        return Embedded(self.content_hash, self.starts, self.ends, vectors)

    def row(self, episode_id: str, model: str) -> dict[str, Any]:
        return {
            "id": episode_id,
            "model": model,
            "content_hash": self.content_hash,
            "starts": self.starts,
            "ends": self.ends,
            "vectors": self.vectors.tolist(),
        }

    @classmethod
    def from_row(cls, row: dict[str, Any], dim: int) -> Embedded:
        stored = row["vectors"]  # lists from a row, or an array (search's chunk_rows)
        vectors = np.asarray([] if stored is None else stored, np.float32).reshape(-1, dim)
        return cls(row["content_hash"], list(row["starts"]), list(row["ends"]), vectors)


def plan(row: dict[str, Any], embedder: Embedder) -> list[Passage]:
    """Every passage of an episode row, in embedding order (no model run: tokenizing 256 KiB
    takes ~0.15 s, embedding it ~17 s)."""
    header, content = vector_texts(row)
    out = [Passage(HEADER, HEADER, header)] if header.strip() else []
    if not content.strip():
        return out
    tokenizer = getattr(embedder, "raw_tokenizer", None)
    measure: Measure
    if tokenizer is not None:  # a local model: exact word pieces, within what it reads
        limit = getattr(embedder, "max_tokens", None)
        tokens = min(CHUNK_TOKENS, limit) if isinstance(limit, int) else CHUNK_TOKENS
        budget = tokens - 2
        measure = TokenMeasure(content, tokenizer, budget)
    else:
        budget = CHAR_WINDOW
        measure = CharMeasure(content, budget)
    pieces = [(s, e, content[s:e]) for s, e in spans(content, budget, measure)]
    out.extend(Passage(s, e, text) for s, e, text in pieces if text.strip())
    return out


def passage_texts(row: dict[str, Any], emb: Embedded) -> list[str]:
    """The texts of `emb`'s passages, cut from the episode row they were planned on."""
    header, content = vector_texts(row)
    return [
        header if s == HEADER else content[s:e] for s, e in zip(emb.starts, emb.ends, strict=True)
    ]


def embed_passages(
    content_hash: str, passages: list[Passage], embedder: Embedder, limit: int
) -> Embedded:
    """Offsets of all `passages` and vectors of the first `limit` of them."""
    if not passages:  # nothing to embed: a zero vector scores 0 against every query
        zero = np.zeros((1, embedder.dim), np.float32)
        return Embedded(content_hash, [HEADER], [HEADER], zero)
    first = [p.text for p in passages[: max(0, limit)]]
    vectors = (
        np.asarray(embedder.embed(first), dtype=np.float32)
        if first
        else np.zeros((0, embedder.dim), np.float32)
    )
    return Embedded(content_hash, [p.start for p in passages], [p.end for p in passages], vectors)


class EmbeddedCache:
    """Recently computed vectors by content hash (LRU, bounded in texts and in vectors); of two
    versions of one text it keeps the one with more passages embedded."""

    def __init__(self, max_texts: int, max_vectors: int) -> None:
        self.max_texts, self.max_vectors = max_texts, max_vectors
        self._items: OrderedDict[str, Embedded] = OrderedDict()
        self._vectors = 0
        self._lock = threading.Lock()

    def get(self, content_hash: str) -> Embedded | None:
        with self._lock:
            return self._items.get(content_hash)

    def remember(self, emb: Embedded) -> Embedded:
        """Cache `emb` unless the cached version of its text has more vectors; returns the
        cached one."""
        with self._lock:
            old = self._items.get(emb.content_hash)
            if old is None or len(emb.vectors) > len(old.vectors):
                self._vectors += len(emb.vectors) - (len(old.vectors) if old else 0)
                self._items[emb.content_hash] = old = emb
            self._items.move_to_end(emb.content_hash)
            while len(self._items) > 1 and (
                len(self._items) > self.max_texts or self._vectors > self.max_vectors
            ):
                _, gone = self._items.popitem(last=False)
                self._vectors -= len(gone.vectors)
        return old
