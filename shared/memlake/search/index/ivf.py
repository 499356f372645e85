"""IVF index of big sealed shards (shard format 3 and 4).

Trained once, when a shard is written (`train`), and stored as plain arrays of the shard's .npz
(docs/decisions/1301, 1316):

    ivf_centroids  float32 (nlist, dim)  coarse centroids (spherical k-means, inner product)
    ivf_offsets    int64 (nlist + 1)     entries of list i: [offsets[i], offsets[i + 1])
    ivf_rows       int32 (rows,)         vector row of each entry, grouped by list
    ivf_codes      uint8                 the entries' codes, list by list, and the quantiser's
                                         arrays: memlake.search.index.ivf_codes (format 4: PQ
                                         fast-scan blocks and ivf_pq; format 3:
                                         SQ8 codes, ivf_sq)

so each list is one contiguous byte range of ivf_rows and of ivf_codes. Loading (`Ivf`)
assembles a FAISS IVF index from them without training; lists enter its inverted lists only
through `Ivf.ensure`, for the lists a search probes, so a reader that fetches byte ranges can
supply just those. The codes encode the vectors themselves (not residuals to their centroid):
a list's codes do not depend on its centroid.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from memlake.errors import CorruptObject
from memlake.search.index import ivf_coarse, ivf_codes, ivf_order, kernels, vector_scan
from memlake.search.index.arrays import F32, I64
from memlake.search.index.kernels import numpy_twins

#: vector rows from which a written shard gets an IVF index, below: the exact flat scan. Equal
#: to shard_vectors.SQ8_MIN_ROWS, so no format-3 shard builds codes at load (a small IVF
#: probes all its lists: the SQ8 scan of decision 1202, stored)
IVF_MIN_ROWS = 4096
#: vector rows per list (nlist = rows / ROWS_PER_LIST)
ROWS_PER_LIST = 128
#: lists probed first (more when they hold too few allowed rows)
NPROBE = 64
#: a filter leaving at most this many vector rows scans them exactly (no IVF)
EXACT_BELOW = 4096
#: store the lists in locality order (ivf_order; off only to measure what it buys)
ORDER_LISTS = True
#: k-means: training points per centroid (a sample) and iterations
TRAIN_PER_LIST = 16
NITER = 4
#: how new shards code their list entries: "pq4" (format 4, fast-scan) or "sq8" (format 3)
CODES = "pq4"
#: a search over n IVF shards probes the n x PLAN_PER_SHARD lists whose centroids are nearest
#: to the query over all of them, each shard at least PLAN_LEAST and at most PLAN_MOST of its
#: own (decision 1303); a shard with none of them is not searched
PLAN_PER_SHARD = 56
#: from PLAN_WIDE_FROM shard-worths (`weight_of`: ~200k episodes) the plan probes at least
#: PLAN_PER_SHARD_WIDE lists a shard-worth: one cutoff across more shards keeps a smaller share
#: of each, and at 300k episodes 56 held 0.941 of the mixed questions' top 10, 72 held 0.9505,
#: for +0.9 ms of a ~20 ms hybrid search (decision 2508)
PLAN_WIDE_FROM = 48.0
PLAN_PER_SHARD_WIDE = 72
#: and at least PLAN_SHARE of all their lists, up to PLAN_SHARE_MOST lists: the per-shard
#: budgets follow the LSM's state (a shard of fewer than WEIGHT_DOCS docs counts as one), so
#: right after the write path merges eight 512-doc shards into one a 20,544-episode tenant
#: probed 280 of its 3,200 lists (mixed recall@10 0.9505) where 20,000 probed 616 of 3,125
#: (0.973); 18% restores it (decision 2514). Bigger tenants' budgets are above the cap
PLAN_SHARE = 0.18
PLAN_SHARE_MOST = 616
PLAN_LEAST = 0
PLAN_MOST = 2 * NPROBE
#: centroids over a search's IVF shards from which the plan scores their int8 copies
#: (ivf_coarse, decision 2507)
PLAN_INT8_FROM = 2048
#: a shard opened by ranges with at least this many lists (a plan over it scores int8
#: centroids, whatever else it plans over) makes its int8 centroids on the thread that opened
#: it, beside the other shards' reads (Shard.open_ivf_ahead): a cold plan over 100k x 20's
#: three big shards made them one after the other
QUANTISE_AHEAD_FROM = PLAN_INT8_FROM
#: docs of the shards NPROBE, PLAN_PER_SHARD, PLAN_MOST and shard_vectors' re-score depth were
#: measured on: a tier-2 shard of the write path (layout.TAIL_DOCS * FANOUT ** MAX_TIER). A
#: bigger shard (maintenance merges them: memlake.search.merging) counts as as many of those as
#: it holds docs (`weight_of`), so merging shards leaves the lists probed and the candidates
#: re-scored what they were (docs/decisions/2501)
WEIGHT_DOCS = 4096
ARRAYS = (
    "ivf_centroids", "ivf_sq", "ivf_pq", "ivf_offsets", "ivf_rows", "ivf_codes", "ivf_gain",
)  # fmt: skip
#: what every IVF shard has, whatever its codes
REQUIRED = ("ivf_centroids", "ivf_offsets", "ivf_rows", "ivf_codes")


def weight_of(docs: int) -> float:
    """How many shards of WEIGHT_DOCS docs a shard of `docs` counts as in the search budgets
    (at least 1: a smaller shard is searched as one of them, as before merges existed)."""
    return max(1.0, docs / WEIGHT_DOCS)


def nlist_for(rows: int) -> int:
    return max(1, rows // ROWS_PER_LIST)


def train(vectors: F32, seed: int = 1234) -> dict[str, Any]:
    """The IVF arrays of `vectors` (rows x dim, unit): k-means on a sample, every row assigned
    to its nearest centroid, codes of kind CODES (memlake.search.index.ivf_codes)."""
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    centroids = _kmeans(x, nlist_for(len(x)), seed)
    return index_arrays(x, centroids, assign(x, centroids), seed)


def _kmeans(x: F32, nlist: int, seed: int) -> F32:
    import faiss

    rows, dim = x.shape
    rng = np.random.default_rng(seed)
    sample = min(rows, nlist * TRAIN_PER_LIST)
    pick = np.sort(rng.choice(rows, sample, replace=False)) if sample < rows else slice(None)
    km = faiss.Kmeans(  # the sample is small on purpose: no "please provide" warning per merge
        dim,
        nlist,
        niter=NITER,
        spherical=True,
        seed=seed,
        max_points_per_centroid=10**9,
        min_points_per_centroid=1,
    )
    km.train(x[pick])
    return np.ascontiguousarray(km.centroids, dtype=np.float32)


def assign(x: F32, centroids: F32) -> I64:
    """The list of each row of `x`: its nearest centroid (inner product)."""
    import faiss

    coarse = faiss.IndexFlatIP(centroids.shape[1])
    coarse.add(np.ascontiguousarray(centroids, dtype=np.float32))
    _, nearest = coarse.search(np.ascontiguousarray(x, dtype=np.float32), 1)
    return nearest[:, 0].astype(np.int64)


def index_arrays(x: F32, centroids: F32, lists: I64, seed: int = 1234) -> dict[str, Any]:
    """The IVF arrays of rows `x` that sit in `lists` (one list number per row) of these
    `centroids`: trained by `train`, or a merge's union of its inputs' lists (their centroids
    side by side, each row in the list it had: memlake.search.index.shard_build)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    rows, dim = x.shape
    nlist = len(centroids)
    if ORDER_LISTS:  # near centroids' lists side by side: a query's lists in few runs (4401)
        centroids, lists = ivf_order.renumber(centroids, lists, seed)
    order = np.argsort(lists, kind="stable")
    offsets = np.zeros(nlist + 1, np.int64)
    np.cumsum(np.bincount(lists, minlength=nlist), out=offsets[1:])
    arrays: dict[str, Any] = {
        "ivf_centroids": np.ascontiguousarray(centroids, dtype=np.float32),
        "ivf_offsets": offsets,
        "ivf_rows": order.astype(np.int32),
    }
    if CODES == "pq4" and ivf_codes.supports_pq(rows, dim):
        arrays.update(ivf_codes.encode_pq(x, offsets, seed, order))
    else:
        arrays.update(ivf_codes.encode_sq8(x, order))
    return arrays


@dataclass(frozen=True)
class Probes:
    """The lists one shard probes, planned across shards: list numbers and their coarse inner
    products with the query, both (1, n), best first (search_preassigned's input)."""

    lists: I64
    scores: F32

    def __len__(self) -> int:
        return int(self.lists.shape[1])


def plan_probes(
    ivfs: Sequence[Ivf],
    q: F32,
    budget: int | None = None,
    least: int | None = None,
    most: int | None = None,
) -> list[Probes]:
    """Which lists each of `ivfs` probes for `q` (1 x dim): one coarse step over every shard's
    centroids, then the `budget` lists with the highest centroid scores over all shards, each
    shard at least `least` and at most `most` of its best (defaults: PLAN_PER_SHARD per shard,
    PLAN_PER_SHARD_WIDE from PLAN_WIDE_FROM shard-worths, but at least PLAN_SHARE of the lists
    up to PLAN_SHARE_MOST; PLAN_LEAST, PLAN_MOST). A shard of
    weight w (`weight_of`) counts as w shards in the budget and may take w x `most` lists: the
    plan over a merged shard picks the lists the plan over its inputs did (their centroids are
    its centroids, memlake.search.index.shard_build). A shard's plan is always its own best
    lists, so widening it is its own coarse search; an empty plan means that no list of the
    shard is among the globally best, so it holds the global top-k only with a small
    probability (decision 1303). From PLAN_INT8_FROM centroids the scores come from their int8
    copies (ivf_coarse, decision 2507)."""
    weights = [index.weight for index in ivfs]
    worths = sum(weights)
    total = sum(index.nlist for index in ivfs)
    if budget is None:
        per = (
            PLAN_PER_SHARD if worths < PLAN_WIDE_FROM else max(PLAN_PER_SHARD, PLAN_PER_SHARD_WIDE)
        )
        budget = max(round(per * worths), min(round(PLAN_SHARE * total), PLAN_SHARE_MOST))
    least = PLAN_LEAST if least is None else least
    most = PLAN_MOST if most is None else most
    if total >= PLAN_INT8_FROM:  # a quarter of the bytes (decision 2507)
        scores = ivf_coarse.scores([index.quantised for index in ivfs], q[0])
    else:
        scores = [index.centroids @ q[0] for index in ivfs]  # BLAS, without the GIL
    every = np.concatenate(scores) if scores else np.zeros(0, np.float32)
    starts = np.asarray([0, *itertools.accumulate(len(s) for s in scores)], np.int64)
    mosts = np.asarray([round(most * w) for w in weights], np.int64)
    cut = numpy_twins.plan_cut(every, budget)
    lists, counts = kernels.active().plan_lists(every, starts, cut, least, mosts)
    # each shard's lists and their scores as slices of two arrays (few numpy calls: each
    # costs microseconds more after a pass over memory than warm)
    firsts = starts[:-1].repeat(counts)
    picked = np.asarray(every[firsts + lists], np.float32)[None]
    ends = [0, *itertools.accumulate(counts.tolist())]
    lists2 = lists[None]
    return [Probes(lists2[:, a:b], picked[:, a:b]) for a, b in itertools.pairwise(ends)]


#: each thread's FAISS search parameters, set anew for each search: making one through SWIG
#: took ~90 us after a pass over memory, setting its two fields ~50 (a search makes one a shard)
_PARAMS = threading.local()


def _search_params() -> Any:
    params = getattr(_PARAMS, "ivf", None)
    if params is None:
        import faiss

        params = _PARAMS.ivf = faiss.SearchParametersIVF()
    return params


class Ivf:
    """A loaded IVF index. `lists(i)` gives list i's (rows, codes); by default slices of the
    stored arrays, a ranged reader can pass its own."""

    def __init__(
        self,
        arrays: Mapping[str, Any],
        dim: int,
        lists: Callable[[int], tuple[Any, Any]] | None = None,
        name: str = "a shard's IVF index",
    ) -> None:
        import faiss

        self.centroids: F32 = arrays["ivf_centroids"]
        self.offsets: I64 = arrays["ivf_offsets"]
        self.nlist = len(self.centroids)
        #: the plan's int8 copy of the centroids, made at the first plan that scores them
        self.quantised = ivf_coarse.Quantised(self.centroids, self._built_later)
        self._arrays = arrays
        #: each row's gain for its code scores (None: a shard written before them, 2508)
        self.gains = ivf_codes.Gains.of(arrays, int(self.offsets[-1]), name)
        self._lists = lists or self._slice
        coarse = faiss.IndexFlatIP(dim)
        coarse.add(self.centroids)
        self.kind = ivf_codes.kind_of(arrays)
        index = ivf_codes.make_index(self.kind, coarse, dim, self.nlist, arrays)
        index.own_fields = True
        coarse.this.disown()  # type: ignore[attr-defined]  # the index frees it
        index.ntotal = int(self.offsets[-1])
        self.index = index
        self.name = name  # for errors: the shard's key when known
        #: how many tier-2 shards this one counts as in the search budgets (`weight_of`: set by
        #: the shard, from its docs)
        self.weight = 1.0
        self._per, self._row_bytes = ivf_codes.packing(self.kind, index)
        self._code_starts = ivf_codes.code_starts(self.offsets, self._per)
        self.invlists: Any = index.invlists
        self.coarse = coarse
        self._have = np.zeros(self.nlist, bool)
        self._complete = self.nlist == 0  # every list added: `missing` has nothing to look up
        self._lock = threading.Lock()

    def _built_later(self, nbytes: int) -> None:
        """Bytes built after loading besides FAISS's lists (the int8 centroids): ShardIvf tells
        its shard, so that the shard cache counts them."""

    def own_nprobe(self) -> int:
        """Lists probed without a plan across shards: NPROBE for each shard's worth (`weight`)."""
        return max(1, round(NPROBE * self.weight))

    def shallow(self, depth: int, first: int, sel: Any, probes: Probes | None) -> bool:
        """Whether `candidates` gives only the `first` best of its `depth`: the planned lists
        hold at least `depth` rows and no filter drops any, so the lists searched and the
        order of their code scores are those of the deeper search."""
        return (
            first < depth
            and sel is None
            and probes is not None
            and self._planned_entries(probes) >= depth
        )

    def _planned_entries(self, probes: Probes) -> int:
        """Entries of the planned lists (allowed or not)."""
        lists = probes.lists[0]
        return int((self.offsets[lists + 1] - self.offsets[lists]).sum())

    def _slice(self, no: int) -> tuple[Any, Any]:
        lo, hi = int(self.offsets[no]), int(self.offsets[no + 1])
        a, b = int(self._code_starts[no]), int(self._code_starts[no + 1])
        return self._arrays["ivf_rows"][lo:hi], self._arrays["ivf_codes"][a:b]

    def missing(self, list_nos: Any) -> I64:
        """Which of these list numbers are real lists not added yet, ascending, once each."""
        if self._complete:
            return np.zeros(0, np.int64)
        wanted = np.unique(np.asarray(list_nos, np.int64))
        wanted = wanted[(wanted >= 0) & (wanted < self.nlist)]
        return wanted[~self._have[wanted]]

    def ensure(self, list_nos: Any) -> None:
        """Add these lists to the inverted lists if they are not there yet (thread-safe)."""
        import faiss

        wanted = self.missing(list_nos)
        if not len(wanted):
            return
        with self._lock:
            for no in wanted.tolist():
                if self._have[no]:
                    continue
                rows, codes = self._lists(no)
                vectors = int(self.offsets[-1])
                wrong = ivf_codes.check_list(rows, codes, self._per, self._row_bytes, vectors)
                if wrong is not None:  # checked here, whole or ranged: FAISS would read past it
                    raise CorruptObject(
                        f"{self.name}: list {no}: {wrong}", hint="rebuild the object"
                    )
                if len(rows):
                    ids = np.ascontiguousarray(rows, dtype=np.int64)
                    codes = np.ascontiguousarray(codes, dtype=np.uint8)
                    self.invlists.add_entries(
                        no, len(ids), faiss.swig_ptr(ids), faiss.swig_ptr(codes)
                    )
                self._have[no] = True
            self._complete = bool(self._have.all())

    def ensure_all(self) -> None:
        """Add every list (a shard held whole, on the cache's promotion thread: the searches
        after it add none, where each new query's first touch of its lists cost up to ~0.2 s
        at 100k episodes)."""
        self.ensure(np.arange(self.nlist))

    def search(
        self, q: F32, k: int, nprobe: int, sel: Any = None, probes: Probes | None = None
    ) -> tuple[F32, I64]:
        """The k best entries (approximate inner products, vector rows; -1 pads) among the
        `nprobe` lists nearest to `q` (1 x dim), or the planned `probes`, and the rows `sel`
        allows."""
        import faiss

        if probes is not None:
            dq, iq = probes.scores, probes.lists
        else:
            dq, iq = self.coarse.search(q, min(nprobe, self.nlist))
        self.ensure(iq[0])
        params = _search_params()
        params.nprobe = iq.shape[1]
        params.sel = sel  # (None: every row)
        dist = np.empty((1, k), np.float32)
        idx = np.empty((1, k), np.int64)
        sp = faiss.swig_ptr
        self.index.search_preassigned_c(  # type: ignore[attr-defined]
            1, sp(q), k, sp(iq), sp(dq), sp(dist), sp(idx), False, params
        )
        return dist, idx

    def nearest(
        self,
        q: F32,
        vectors: F32,
        want: int,
        depth: int,
        allowed: int,
        mask: Any,
        sel: Any,
        probes: Probes | None = None,
    ) -> tuple[I64, F32]:
        """The `want` rows closest to `q` among the `allowed` rows (`mask` / `sel`; None: all),
        best first, with exact cosines from `vectors`: the candidates re-scored."""
        rows, _, _ = self.candidates(q, depth, allowed, mask, sel, probes)
        return vector_scan.rescored(rows, vectors, q, want)

    def candidates(
        self,
        q: F32,
        depth: int,
        allowed: int,
        mask: Any,
        sel: Any,
        probes: Probes | None = None,
        first: int | None = None,
    ) -> tuple[I64, F32, Literal["scan", "codes", "first"]]:
        """(rows, their scores from the codes, how they were found) among the `allowed` rows
        (`mask` / `sel`; None: all): `depth` candidates from the codes of the probed lists
        (`own_nprobe` nearest, or the planned `probes`): "codes". When the probed lists hold
        fewer than `depth` allowed rows, 4x more lists are probed (up to all); a filter
        leaving at most EXACT_BELOW rows is every allowed row instead, without scores: "scan".
        `first`: only the `first` best of those `depth` where that asks the same lists
        (`shallow`): "first". The scores are the codes' own, best first (`gains` ranks them
        nearer the exact order, decision 2508)."""
        if mask is not None and allowed <= EXACT_BELOW:
            rows = np.flatnonzero(mask)
            return rows, np.zeros(len(rows), np.float32), "scan"
        if first is not None and self.shallow(depth, first, sel, probes):
            assert probes is not None
            dist, idx = self.search(q, first, len(probes), None, probes)
            found = idx[0] >= 0
            return idx[0][found], dist[0][found], "first"
        nprobe = self.own_nprobe() if probes is None else len(probes)
        if probes is not None and self._planned_entries(probes) < depth:
            probes, nprobe = None, max(1, 4 * nprobe)  # too few rows even unfiltered
        while True:
            dist, idx = self.search(q, depth, nprobe, sel, probes)
            found = idx[0] >= 0
            if found.sum() >= depth or nprobe >= self.nlist:
                return idx[0][found], dist[0][found], "codes"
            probes, nprobe = None, max(1, 4 * nprobe)
