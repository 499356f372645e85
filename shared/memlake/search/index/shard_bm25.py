"""BM25 over a shard's postings (memlake.search.index.shard.Shard's BM25 half).

BM25 is the `lucene` variant of bm25s (k1 1.5, b 0.75): score(d) = sum over query terms t of
idf(t) * tf / (tf + k1 * (1 - b + b * len(d) / avgdl)). The tf part is precomputed for all
postings of a whole shard and per fetched slice of a ranged one (elementwise: the same
numbers); idf comes from the query (every searched shard's document frequencies).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

from memlake.search.index.arrays import F32, I32, I64
from memlake.search.index.shard_source import Postings, RangedSource


class Bm25Postings:
    """Mixin: BM25 of a shard's docs and passages from its postings (whole arrays, or slices
    of the query's terms read by ranges through `_source`)."""

    n: int
    has_passages: bool
    indptr: I64
    indices: I32
    tfc: F32
    p_doc: I32
    p_indptr: I64
    p_indices: I32
    p_tfc: F32
    p_first: I64
    _term_ids: dict[str, int]
    _source: RangedSource | None

    def term_ids(self, terms: Sequence[str]) -> list[int]:
        """Local id of each term (-1 where this shard has not seen it)."""
        return [self._term_ids.get(t, -1) for t in terms]

    def doc_freqs(self, ids: Sequence[int]) -> I64:
        arr = np.asarray(ids, dtype=np.int64)
        out = np.zeros(len(arr), dtype=np.int64)
        seen = arr >= 0
        out[seen] = self.indptr[arr[seen] + 1] - self.indptr[arr[seen]]
        return out

    def read_postings(self, ids: Sequence[int]) -> dict[str, Postings]:
        """Both kinds' postings of these term ids ("" episodes, "p_" passages when the shard
        has them): a ranged shard reads them in one round and computes their saturated tf, so
        a search can do this ahead, on another thread, for every ranged shard at once."""
        kinds = ("", "p_") if self.has_passages else ("",)
        return {kind: self._postings(ids, kind) for kind in kinds}

    def _postings(self, ids: Sequence[int], kind: str) -> Postings:
        """(docs, saturated tf) of each term id's postings (None: -1); kind "" episodes, "p_"
        passages."""
        if self._source is not None:
            return self._source.postings(ids, kind)
        ptr, docs, sat = (
            (self.p_indptr, self.p_indices, self.p_tfc)
            if kind
            else (self.indptr, self.indices, self.tfc)
        )
        return [
            None if t < 0 else (docs[ptr[t] : ptr[t + 1]], sat[ptr[t] : ptr[t + 1]]) for t in ids
        ]

    def bm25(
        self, ids: Sequence[int], idf: Sequence[float], read: dict[str, Postings] | None = None
    ) -> F32:
        """BM25 score of every doc for query terms (local ids) with the given idf weights;
        `read`: their postings from read_postings (None: read here)."""
        postings = read[""] if read is not None else self._postings(ids, "")
        return _accumulate(self.n, postings, idf)

    def bm25_passages(
        self,
        ids: Sequence[int],
        idf: Sequence[float],
        second: bool = False,
        read: dict[str, Postings] | None = None,
    ) -> tuple[F32, F32, F32]:
        """(best passage BM25 score per doc, second-best per doc (zeros unless `second`),
        every passage's score). A format-1 shard has no passages: all zero."""
        if not self.has_passages or not self.n:
            zero = np.zeros(self.n, np.float32)
            return zero, zero, np.zeros(0, np.float32)
        postings = read["p_"] if read is not None else self._postings(ids, "p_")
        scores = _accumulate(len(self.p_doc), postings, idf)
        best = np.maximum.reduceat(scores, self.p_first[:-1])  # every doc has a passage
        runner = np.zeros(self.n, np.float32)
        if second:
            hit = np.flatnonzero(scores > 0)
            docs = self.p_doc[hit]
            order = np.lexsort((-scores[hit], docs))  # by doc, best passage first
            hit, docs = hit[order], docs[order]
            first = np.ones(len(hit), bool)
            first[1:] = docs[1:] != docs[:-1]
            nxt = np.zeros(len(hit), bool)
            nxt[1:] = first[:-1] & ~first[1:]  # the second passage of a doc
            runner[docs[nxt]] = scores[hit[nxt]]
        return best, runner, scores

    def best_passages(self, docs: I64, scores: F32) -> I64:
        """The best passage of each of `docs` by passage `scores` (-1: none scored > 0); the
        first of equals. Vectorised over the docs' passage runs (no loop per doc)."""
        out = np.full(len(docs), -1, np.int64)
        if not len(scores) or not len(docs):
            return out
        lo = self.p_first[docs]
        counts = self.p_first[docs + 1] - lo  # >= 1: every doc has a passage
        starts = np.zeros(len(docs), np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        rows = np.repeat(lo - starts, counts) + np.arange(int(counts.sum()))
        vals = scores[rows]
        best = np.maximum.reduceat(vals, starts)
        at_best = np.flatnonzero(vals == np.repeat(best, counts))
        run = np.repeat(np.arange(len(docs)), counts)[at_best]
        first = at_best[np.r_[True, run[1:] != run[:-1]]]  # the first best row of each run
        return np.where(best > 0, rows[first], out)


@cache
def _csc_matvec() -> Callable[..., None]:
    """scipy's CSC matrix-vector kernel, y[indices[i]] += data[i] * x[column], a C++ loop run
    with the GIL released: 3-4x faster than np.add.at, which holds the GIL, on a big shard's
    postings (decision 1317). Imported at the first BM25 (~140 ms of scipy.sparse), not with
    the handlers: a cold Lambda that only lists tools never pays it."""
    from scipy.sparse._sparsetools import csc_matvec

    kernel: Callable[..., None] = csc_matvec
    return kernel


def _accumulate(n: int, postings: Postings, idf: Sequence[float]) -> F32:
    """scores[d] = sum over the query terms of idf * saturated tf of d; float32 in the order
    of the terms, so exactly what np.add.at(scores, docs, idf * sat) adds up."""
    scores = np.zeros(n, dtype=np.float32)
    matvec = _csc_matvec()
    weight = np.zeros(1, dtype=np.float32)
    column: Any = np.zeros(2, dtype=np.int32)  # one term's postings: a one-column matrix
    for got, w in zip(postings, idf, strict=True):
        if got is not None:
            docs, sat = got
            weight[0], column[1] = w, len(docs)
            matvec(n, 1, column, docs, sat, weight, scores)
    return scores
