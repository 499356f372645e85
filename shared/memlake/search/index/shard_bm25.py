"""BM25 over a shard's postings (memlake.search.index.shard.Shard's BM25 half).

BM25 is the `lucene` variant of bm25s (k1 1.5, b 0.75): score(d) = sum over query terms t of
idf(t) * tf / (tf + k1 * (1 - b + b * len(d) / avgdl)). The tf part is precomputed for all
postings of a whole shard and per fetched slice of a ranged one (elementwise: the same
numbers); idf comes from the query (every searched shard's document frequencies).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memlake.search.index.arrays import F32, I32, I64
from memlake.search.index.kernels import numpy_twins
from memlake.search.index.shard_source import Postings, RangedSource
from memlake.search.index.vocab import Vocab


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
    _vocab: Vocab
    _source: RangedSource | None

    def term_ids(self, terms: Sequence[str]) -> list[int]:
        """Local id of each term (-1 where this shard has not seen it)."""
        return [self._vocab.index(t) for t in terms]

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

    def posting_runs(
        self, ids: Sequence[int], kind: str, read: dict[str, Postings] | None = None
    ) -> Runs:
        """The postings of these term ids as runs (`Runs`; kind "" episodes, "p_" passages):
        a whole shard's are its own arrays with each term's bounds (nothing copied), a ranged
        shard's (or those read ahead: `read`) are joined in term order."""
        if read is not None:
            return runs_of(read[kind])
        if self._source is not None:
            return runs_of(self._source.postings(ids, kind))
        ptr, docs, sat = (
            (self.p_indptr, self.p_indices, self.p_tfc)
            if kind
            else (self.indptr, self.indices, self.tfc)
        )
        at = np.asarray(ids, np.int64)
        seen = at >= 0
        lo = np.where(seen, ptr[np.where(seen, at, 0)], 0)
        hi = np.where(seen, ptr[np.where(seen, at + 1, 0)], 0)
        return docs, sat, lo.astype(np.int64), hi.astype(np.int64)

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
        if second:
            runner = numpy_twins.second_best(self.n, scores, self.p_first)
        else:
            runner = np.zeros(self.n, np.float32)
        return best, runner, scores

    def best_passages(self, docs: I64, scores: F32) -> I64:
        """The best passage of each of `docs` by passage `scores` (-1: none scored > 0); the
        first of equals (numpy_twins.best_passages)."""
        return numpy_twins.best_passages(self.p_first, docs, scores)


#: one kind's postings of a query's terms as runs: (docs, saturated tf, each term's first
#: entry, its end); a term the shard has not seen is an empty run
Runs = tuple[I32, F32, I64, I64]
NO_RUNS: Runs = (
    np.zeros(0, np.int32),
    np.zeros(0, np.float32),
    np.zeros(0, np.int64),
    np.zeros(0, np.int64),
)


def runs_of(postings: Postings) -> Runs:
    """Postings read per term (a ranged shard's, or read ahead) as one run each."""
    sizes = np.array([0 if got is None else len(got[0]) for got in postings], np.int64)
    hi = np.cumsum(sizes)
    parts = [got for got in postings if got is not None]
    if not parts:
        return NO_RUNS[0], NO_RUNS[1], hi - sizes, hi
    docs = np.concatenate([got[0] for got in parts]).astype(np.int32, copy=False)
    sat = np.concatenate([got[1] for got in parts]).astype(np.float32, copy=False)
    return docs, sat, hi - sizes, hi


def _accumulate(n: int, postings: Postings, idf: Sequence[float]) -> F32:
    """scores[d] = sum over the query terms of idf * saturated tf of d; float32 in the order
    of the terms, so exactly what np.add.at(scores, docs, idf * sat) adds up."""
    docs, sat, lo, hi = runs_of(postings)
    return numpy_twins.accumulate(n, docs, sat, lo, hi, np.asarray(idf, np.float32))
