"""The vector half of memlake.search.index.shard.Shard: the rows nearest a query, grouped into docs.

One shard on its own (`vector_top`): candidates from the codes (IVF lists, or SQ8 codes of a
flat shard), re-scored exactly from the float32 rows, and asked again deeper while the best
rows name fewer than k docs. A search over many shards does it in two steps (decision 1318):
every shard's candidates first (`vector_candidates`), then one cutoff over all of their code
scores, and each shard re-scores only its candidates at or above it (`vector_finish`). At 100k
episodes that re-scores ~0.5k rows instead of ~10k (each shard's 400), and a cold search reads
that many float32 rows by ranges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from memlake.search.index import ivf, kernels, vector_scan
from memlake.search.index.arrays import F32, I32, I64

if TYPE_CHECKING:
    import faiss

#: vector rows from which a shard scans 8-bit codes and re-scores exactly (docs/decisions/1202)
SQ8_MIN_ROWS = 4096
#: candidates scanned per row wanted when re-scoring
RESCORE = 2
#: vector rows asked per episode wanted (at most the shard's average rows per episode)
ROWS_PER_DOC_WANTED = 4
#: (docs, best cosine, second-best cosine, best row's passage)
DocTop = tuple[I64, F32, F32, I64]


@dataclass
class Candidates:
    """One shard's candidate rows for a query. `kind`: "exact" (every allowed row of a small
    flat shard with its exact cosine, best first; `want` of them count first), "all" (rows to
    re-score whatever the cutoff: a filter's exact scan) or "codes" (scores from the codes, to
    re-score above the cutoff)."""

    q: F32
    rows: I64
    scores: F32  # what ranks them for the re-score
    kind: Literal["exact", "all", "codes"]
    want: int  # rows kept after the re-score
    #: candidates asked of a shard's worth of rows (an IVF shard of weight w asked w x as many:
    #: ivf.weight_of): the depth one cutoff across shards is counted in (decision 1318)
    depth: int
    allowed: int  # rows the filter allows
    #: the first of two rounds (`vector_candidates` with a share): these are the best of the
    #: code candidates only, and asking again with none gives them and the rest
    partial: bool = False
    #: the code scores as the codes give them, best first (`scores` are times each row's
    #: gain where the shard has them, decision 2508; None: the same as `scores`)
    codes: F32 | None = None
    #: the candidates re-scored before the cutoff across shards (`rescore_early`): which of
    #: `rows` (a mask) and their exact scores, in that order (None: none yet)
    early: Any = None
    early_exact: F32 | None = None

    @property
    def coded(self) -> F32:
        return self.scores if self.codes is None else self.codes


class ShardVectors:
    """Mixin: a shard's vector search (Shard provides the arrays and indexes)."""

    n: int
    vectors: Any
    chunk_doc: I32
    chunk_passage: I32
    _ivf_arrays: dict[str, Any]

    def _ivf_index(self) -> ivf.Ivf | None:
        raise NotImplementedError

    def _index(self) -> faiss.Index:
        raise NotImplementedError

    def _filtered(self, mask: Any) -> tuple[Any, Any, Any, int]:
        """(FAISS params and what they need alive, row mask, allowed rows) of a doc mask."""
        m = len(self.vectors)
        if mask is None:
            return None, None, None, m
        rows_mask = mask[self.chunk_doc]
        allowed = int(rows_mask.sum())
        if allowed in (0, m):
            return None, None, None, allowed
        params, keep = vector_scan.row_filter(rows_mask)
        return params, keep, rows_mask, allowed

    def depth_most(self, k: int) -> int:
        """The most candidates `vector_candidates` counts in one shard's re-score depth for k
        docs (Candidates.depth: at most this, whatever the filter and the shard)."""
        return k * ROWS_PER_DOC_WANTED * RESCORE

    def _weighted(self, depth: int, allowed: int) -> int:
        """Candidates an IVF shard takes from its codes: `depth` for each tier-2 shard's worth
        of docs it holds (ivf.weight_of), so a merged shard gives the cutoff across shards the
        candidates its inputs gave (docs/decisions/2501)."""
        return min(allowed, round(depth * ivf.weight_of(self.n)))

    def _want(self, k: int, allowed: int) -> int:
        """Rows wanted for k docs: the nearest rows are mostly of distinct docs (a search
        asks again for more when they are not)."""
        m = len(self.vectors)
        return min(allowed, k * min(ROWS_PER_DOC_WANTED, max(1, -(-m // max(self.n, 1)))))

    def vector_candidates(
        self, query: F32, mask: Any, k: int, probes: ivf.Probes | None = None, share: float = 1.0
    ) -> Candidates | None:
        """The first step of a search over many shards (None: no row allowed). `share` < 1:
        an IVF shard searching planned lists gives only that share of its best candidates
        where they are the first of the whole answer (`partial`; ivf.Ivf.shallow)."""
        if len(self.vectors) == 0 or k <= 0:
            return None
        params, keep, rows_mask, allowed = self._filtered(mask)
        if allowed == 0:
            return None
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        want = self._want(k, allowed)
        depth = min(allowed, want * RESCORE)
        if self._ivf_arrays:
            ivf_index = self._ivf_index()
            assert ivf_index is not None
            sel = None if params is None else params.sel
            asked = self._weighted(depth, allowed)
            first = max(1, math.ceil(asked * share)) if share < 1 else None
            rows, codes, how = ivf_index.candidates(
                q, asked, allowed, rows_mask, sel, probes, first
            )
            del keep
            kind: Literal["all", "codes"] = "all" if how == "scan" else "codes"
            gained = ivf_index.gains.times(rows, codes) if kind == "codes" else codes
            partial = how == "first"
            return Candidates(q, rows, gained, kind, want, depth, allowed, partial, codes)
        exact = len(self.vectors) < SQ8_MIN_ROWS
        # a small flat shard's every allowed row, best first: vector_finish deepens over them
        # without searching again (it took a second search for 1 in ~1 searches at 20k)
        dist, idx = self._index().search(q, allowed if exact else depth, params=params)
        del keep
        found = idx[0] >= 0
        rows, scores = idx[0][found].astype(np.int64), dist[0][found]
        return Candidates(q, rows, scores, "exact" if exact else "codes", want, depth, allowed)

    def vector_finish(self, c: Candidates, k: int, cutoff: float) -> DocTop | None:
        """The second step: the k docs of the candidates, re-scored (those of the codes from
        `cutoff` on). None when they name fewer than k docs and a deeper search of this shard
        could find more that matter (no candidate fell below the cutoff): then only the
        shard's own search (`vector_top`) is right."""
        take = c.scores >= cutoff if c.kind == "codes" else np.ones(len(c.rows), bool)
        if c.kind == "exact":  # every allowed row: as vector_top's deeper searches would
            want = c.want
            while True:
                top = self._top_docs(c.rows, c.scores, want, k)
                if len(top[0]) >= k or want >= c.allowed:
                    return top
                want = min(c.allowed, want * 4)
        else:
            rows = c.rows[take]
            if c.early_exact is not None and not (take & ~c.early).any():  # all early
                exact = c.early_exact[take[c.early]]
            else:
                exact = vector_scan.exact_scores(rows, self.vectors, c.q)
            top = self._top_docs(rows, exact, c.want, k)
        if len(top[0]) < k and c.want < c.allowed and take.all():
            return None
        return top

    def rescore_early(self, c: Candidates, bound: float) -> None:
        """Re-score now the candidates whose score is at least `bound`, a score at or below
        the cutoff that one search's shards will share (memlake.search.query.sides, decision
        2511): `vector_finish` then takes their exact scores instead of gathering the rows."""
        early = c.scores >= bound
        c.early_exact = vector_scan.exact_scores(c.rows[early], self.vectors, c.q)
        c.early = early

    def vector_top(self, query: F32, mask: Any, k: int, probes: ivf.Probes | None = None) -> DocTop:
        """The k docs whose best row is closest to `query`, among `mask`, searching this shard
        alone. `probes`: the IVF lists to probe, planned across shards (ivf.plan_probes; None:
        the shard's own NPROBE nearest; ignored without an IVF index)."""
        empty = np.empty(0, np.int64), np.empty(0, np.float32)
        params, keep, rows_mask, allowed = self._filtered(mask)
        if len(self.vectors) == 0 or k <= 0 or allowed == 0:
            return empty[0], empty[1], empty[1], empty[0]
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        want = self._want(k, allowed)
        while True:
            rows, scores = self._nearest(q, want, allowed, params, rows_mask, probes)
            top = self._top_docs(rows, scores, len(rows), k)
            if len(top[0]) >= k or want >= allowed:
                del keep
                return top
            want = min(allowed, want * 4)

    def _nearest(
        self, q: F32, want: int, allowed: int, params: Any, rows_mask: Any, probes: Any
    ) -> tuple[I64, F32]:
        """The `want` rows closest to `q` (exact cosines, best first) among the allowed rows."""
        depth = min(allowed, want * RESCORE)
        if self._ivf_arrays:
            ivf_index = self._ivf_index()
            assert ivf_index is not None
            sel = None if params is None else params.sel
            depth = self._weighted(depth, allowed)
            return ivf_index.nearest(q, self.vectors, want, depth, allowed, rows_mask, sel, probes)
        index = self._index()
        if len(self.vectors) < SQ8_MIN_ROWS:
            dist, idx = index.search(q, want, params=params)
            found = idx[0] >= 0
            return idx[0][found].astype(np.int64), dist[0][found]
        _, idx = index.search(q, depth, params=params)
        return vector_scan.rescored(idx[0][idx[0] >= 0], self.vectors, q, want)

    def _top_docs(self, rows: I64, scores: F32, want: int, k: int) -> DocTop:
        """The k best docs of the `want` best candidate rows (exact `scores`): each doc's best
        and second-best score among those rows (0: none) and its best row's passage
        (kernels.top_docs: compiled and without the GIL where numba is, decision 2502)."""
        top: DocTop = kernels.active().top_docs(
            np.asarray(rows, np.int64), scores, want, self.chunk_doc, self.chunk_passage, self.n, k
        )
        return top
