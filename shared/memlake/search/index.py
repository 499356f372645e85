"""One index shard: BM25 postings and chunk vectors for a group of episodes, as one object.

A shard is immutable once written. Its object is an uncompressed .npz (named .npy arrays plus a
JSON header, loaded with allow_pickle=False, the way bm25s saves an index):

    header   JSON: format, model, dim, k1, b
    ids      episode ids, '\\n'-joined UTF-8        seq      commit version of each doc
    t_start  when each episode happened (us, UTC)  t_end    its end (us)
    ctx      context number per doc (-1: none)     doc_len  weighted term count per doc
    vocab    terms, '\\n'-joined (sorted)          indptr   CSC over terms (len(vocab) + 1)
    indices  doc of each posting                   tf       term frequency of each posting
    vectors  chunk vectors (chunks x dim, unit)    chunk_doc  doc of each chunk (ascending)

BM25 is the `lucene` variant of bm25s (k1 1.5, b 0.75): score(d) = sum over query terms t of
idf(t) * tf / (tf + k1 * (1 - b + b * len(d) / avgdl)). The shard keeps the raw term
frequencies; the tf part is computed at load and idf at query time from the document
frequencies of every shard searched, so scores are comparable across shards (bm25s bakes a
per-index idf into its matrix, which would rank a rare term lower in a small tail shard).
A filter multiplies the scores by a 0/1 weight mask before top-k, as bm25s's weight_mask does.

Vectors: exact inner product (FAISS IndexFlatIP) over unit vectors, i.e. cosine. An episode's
vector score is its best chunk's; filters are a FAISS IDSelectorBitmap over chunks, so the
top-k is taken among allowed rows only, never cut short by a post-filter.
"""

from __future__ import annotations

import io
import json
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import faiss

FORMAT = 1
K1 = 1.5
B = 0.75
F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
NO_CONTEXT = -1


@dataclass(frozen=True)
class Doc:
    """An episode as a shard indexes it."""

    id: str
    seq: int
    t_start: int  # us since epoch, UTC
    t_end: int
    context: str | None
    terms: Sequence[str]
    vectors: F32  # (chunks, dim), unit rows; at least one row


def _blob(items: Sequence[str]) -> npt.NDArray[np.uint8]:
    return np.frombuffer("\n".join(items).encode(), dtype=np.uint8)


def _unblob(arr: npt.NDArray[np.uint8]) -> list[str]:
    text = arr.tobytes().decode()
    return text.split("\n") if text else []


class Shard:
    """A loaded shard: arrays plus lazily built search structures (thread-safe)."""

    def __init__(self, arrays: dict[str, Any]) -> None:
        head = json.loads(arrays["header"].tobytes())
        if head.get("format") != FORMAT:
            raise ValueError(f"unsupported shard format {head.get('format')!r}")
        self.model: str = head["model"]
        self.dim: int = int(head["dim"])
        self.contexts: list[str] = list(head["contexts"])
        self.id_list = _unblob(arrays["ids"])
        self.ids = np.array(self.id_list, dtype=str)
        self.vocab = _unblob(arrays["vocab"])
        self.seq: I64 = arrays["seq"]
        self.t_start: I64 = arrays["t_start"]
        self.t_end: I64 = arrays["t_end"]
        self.ctx: npt.NDArray[np.int32] = arrays["ctx"]
        self.doc_len: F32 = arrays["doc_len"]
        self.indptr: I64 = arrays["indptr"]
        self.indices: npt.NDArray[np.int32] = arrays["indices"]
        self.tf: F32 = arrays["tf"]
        self.vectors: F32 = arrays["vectors"]
        self.chunk_doc: npt.NDArray[np.int32] = arrays["chunk_doc"]
        self.n = len(self.id_list)
        avgdl = float(self.doc_len.mean()) if self.n else 1.0
        norm = K1 * ((1 - B) + B * self.doc_len / max(avgdl, 1e-9))
        self.tfc: F32 = (self.tf / (self.tf + norm[self.indices])).astype(np.float32)
        self._term_ids = {t: i for i, t in enumerate(self.vocab)}
        self._faiss: faiss.Index | None = None
        self._lock = threading.Lock()
        self.nbytes = sum(int(a.nbytes) for a in arrays.values() if hasattr(a, "nbytes"))

    # serialisation -------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes) -> Shard:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return cls({name: npz[name] for name in npz.files})

    # BM25 ------------------------------------------------------------------------------
    def term_ids(self, terms: Sequence[str]) -> list[int]:
        """Local id of each term (-1 where this shard has not seen it)."""
        return [self._term_ids.get(t, -1) for t in terms]

    def doc_freqs(self, ids: Sequence[int]) -> I64:
        arr = np.asarray(ids, dtype=np.int64)
        out = np.zeros(len(arr), dtype=np.int64)
        seen = arr >= 0
        out[seen] = self.indptr[arr[seen] + 1] - self.indptr[arr[seen]]
        return out

    def bm25(self, ids: Sequence[int], idf: Sequence[float]) -> F32:
        """BM25 score of every doc for query terms (local ids) with the given idf weights."""
        scores = np.zeros(self.n, dtype=np.float32)
        for t, w in zip(ids, idf, strict=True):
            if t < 0:
                continue
            lo, hi = int(self.indptr[t]), int(self.indptr[t + 1])
            scores[self.indices[lo:hi]] += np.float32(w) * self.tfc[lo:hi]  # docs unique per term
        return scores

    # vectors ---------------------------------------------------------------------------
    def _index(self) -> faiss.Index:
        if self._faiss is None:
            import faiss  # lazily: a cold Lambda that only lists tools never loads it

            with self._lock:
                if self._faiss is None:
                    index = faiss.IndexFlatIP(self.dim)
                    if len(self.vectors):
                        index.add(self.vectors)
                    self._faiss = index
        return self._faiss

    def vector_top(self, query: F32, mask: npt.NDArray[np.bool_] | None, k: int) -> tuple[I64, F32]:
        """(docs, scores) of the k docs whose best chunk is closest to `query`, among `mask`."""
        m = len(self.vectors)
        if m == 0 or k <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        import faiss

        params = None
        allowed = m
        keep: list[Any] = []
        if mask is not None:
            chunk_mask = mask[self.chunk_doc]
            allowed = int(chunk_mask.sum())
            if allowed == 0:
                return np.empty(0, np.int64), np.empty(0, np.float32)
            if allowed < m:
                bits = np.packbits(chunk_mask, bitorder="little")
                sel = faiss.IDSelectorBitmap(m, faiss.swig_ptr(bits))
                keep = [bits, sel]  # the selector reads `bits` during search
                params = faiss.SearchParameters()
                params.sel = sel
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        want = min(allowed, k * max(1, -(-m // max(self.n, 1))))
        while True:
            dist, idx = self._index().search(q, want, params=params)
            found = idx[0] >= 0
            chunks, scores = idx[0][found], dist[0][found]
            docs = self.chunk_doc[chunks].astype(np.int64)
            _, first = np.unique(docs, return_index=True)
            first.sort()  # first (best) chunk of each doc, in score order
            if len(first) >= k or want >= allowed:
                del keep
                return docs[first][:k], scores[first][:k]
            want = min(allowed, want * 4)


def build(
    docs: Sequence[Doc], *, model: str, dim: int, parts: Sequence[tuple[Shard, Any]] = ()
) -> bytes:
    """Serialise a shard of `parts` (loaded shards with a keep-mask over their docs, in order)
    followed by `docs`. Nothing is re-embedded or re-tokenised: old docs keep their stored term
    frequencies and vectors."""
    vocabs: list[list[str]] = []
    post_terms: list[I64] = []
    post_docs: list[I64] = []
    post_tf: list[F32] = []
    cols: dict[str, list[Any]] = {k: [] for k in ("seq", "t_start", "t_end", "doc_len")}
    ids: list[str] = []
    contexts: dict[str, int] = {}
    ctx_col: list[npt.NDArray[np.int32]] = []
    vectors: list[F32] = []
    chunk_doc: list[npt.NDArray[np.int32]] = []
    offset = 0

    def ctx_no(name: str | None) -> int:
        return NO_CONTEXT if name is None else contexts.setdefault(name, len(contexts))

    for shard, keep in parts:
        if shard.model != model or shard.dim != dim:
            raise ValueError(f"shard of {shard.model}/{shard.dim} cannot merge into {model}/{dim}")
        keep = np.ones(shard.n, bool) if keep is None else np.asarray(keep, bool)
        new_no = np.cumsum(keep) - 1 + offset
        counts = np.diff(shard.indptr)
        terms = np.repeat(np.arange(len(shard.vocab), dtype=np.int64), counts)
        live = keep[shard.indices]
        vocabs.append(shard.vocab)
        post_terms.append(terms[live])
        post_docs.append(new_no[shard.indices[live]])
        post_tf.append(shard.tf[live])
        for name in cols:
            cols[name].append(getattr(shard, name)[keep])
        ids.extend(np.asarray(shard.id_list, dtype=object)[keep].tolist())
        remap = np.array([ctx_no(c) for c in shard.contexts] + [NO_CONTEXT], dtype=np.int32)
        ctx_col.append(remap[shard.ctx[keep]])  # -1 indexes the trailing NO_CONTEXT
        chunk_live = keep[shard.chunk_doc]
        vectors.append(shard.vectors[chunk_live])
        chunk_doc.append(new_no[shard.chunk_doc[chunk_live]].astype(np.int32))
        offset += int(keep.sum())

    if docs:
        local: dict[str, int] = {}
        t_list, d_list, f_list = [], [], []
        for i, doc in enumerate(docs):
            if doc.vectors.ndim != 2 or doc.vectors.shape[1] != dim or not len(doc.vectors):
                raise ValueError(f"episode {doc.id} needs (chunks >= 1, {dim}) vectors")
            for term, tf in Counter(doc.terms).items():
                t_list.append(local.setdefault(term, len(local)))
                d_list.append(offset + i)
                f_list.append(tf)
            vectors.append(np.asarray(doc.vectors, dtype=np.float32))
            chunk_doc.append(np.full(len(doc.vectors), offset + i, dtype=np.int32))
        vocabs.append(list(local))
        post_terms.append(np.array(t_list, dtype=np.int64))
        post_docs.append(np.array(d_list, dtype=np.int64))
        post_tf.append(np.array(f_list, dtype=np.float32))
        cols["seq"].append(np.array([d.seq for d in docs], dtype=np.int64))
        cols["t_start"].append(np.array([d.t_start for d in docs], dtype=np.int64))
        cols["t_end"].append(np.array([d.t_end for d in docs], dtype=np.int64))
        cols["doc_len"].append(np.array([len(d.terms) for d in docs], dtype=np.float32))
        ids.extend(d.id for d in docs)
        ctx_col.append(np.array([ctx_no(d.context) for d in docs], dtype=np.int32))
        offset += len(docs)

    # one sorted vocabulary for all parts; postings sorted by (term, doc) make the CSC
    all_terms = np.array([t for v in vocabs for t in v], dtype=object)
    uniq, inverse = np.empty(0, object), np.empty(0, np.int64)
    if len(all_terms):
        uniq, inverse = np.unique(all_terms, return_inverse=True)
    starts = np.cumsum([0] + [len(v) for v in vocabs])
    term_col = (
        np.concatenate(
            [np.asarray(inverse[starts[i] : starts[i + 1]])[p] for i, p in enumerate(post_terms)]
        )
        if post_terms
        else np.empty(0, np.int64)
    )
    doc_col = np.concatenate(post_docs) if post_docs else np.empty(0, np.int64)
    tf_col = np.concatenate(post_tf) if post_tf else np.empty(0, np.float32)
    used = np.bincount(term_col.astype(np.int64), minlength=len(uniq)) > 0
    renum = np.cumsum(used) - 1
    term_col = renum[term_col] if len(term_col) else term_col
    vocab = [str(t) for t, u in zip(uniq.tolist(), used.tolist(), strict=True) if u]
    order = np.lexsort((doc_col, term_col))
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(term_col, minlength=len(vocab)), out=indptr[1:])

    def cat(name: str, dtype: Any) -> Any:
        return np.concatenate(cols[name]).astype(dtype) if cols[name] else np.empty(0, dtype)

    head = {"format": FORMAT, "model": model, "dim": dim, "k1": K1, "b": B}
    head["contexts"] = list(contexts)
    arrays = {
        "header": np.frombuffer(json.dumps(head).encode(), dtype=np.uint8),
        "ids": _blob(ids),
        "vocab": _blob(vocab),
        "seq": cat("seq", np.int64),
        "t_start": cat("t_start", np.int64),
        "t_end": cat("t_end", np.int64),
        "ctx": np.concatenate(ctx_col).astype(np.int32) if ctx_col else np.empty(0, np.int32),
        "doc_len": cat("doc_len", np.float32),
        "indptr": indptr,
        "indices": doc_col[order].astype(np.int32),
        "tf": tf_col[order].astype(np.float32),
        "vectors": (
            np.concatenate(vectors).astype(np.float32)
            if vectors
            else np.empty((0, dim), np.float32)
        ),
        "chunk_doc": np.concatenate(chunk_doc) if chunk_doc else np.empty(0, np.int32),
    }
    sink = io.BytesIO()
    np.savez(sink, **arrays)
    return sink.getvalue()
