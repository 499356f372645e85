"""The per-shard hot loops in plain numpy: the fallback of memlake.search.index.kernels and the
reference its compiled twins (numba_kernels) are tested against.

Each function takes and returns arrays only, with the argument order and types of its twin;
ties are broken the same way in both (lower position first), so both give the same ids in the
same order, and the same float32 operations in the same order give the same scores.

- `bm25_top`: a shard's BM25 for one query: episode and passage postings accumulated (scipy's
  csc_matvec, decision 1317, loaded without scipy.sparse's init: 2513), each doc's best (and
  second) passage, the aggregate (episode, max, top2 or mix), the share of the query's total
  idf, the filter mask, the k best docs;
- `best_passages`: the best passage of some docs by passage scores;
- `top_docs`: re-scored candidate rows grouped into their docs (best and second cosine, the
  best row's passage), the k best;
- `plan_lists`: the IVF probe plan's selection over every shard's centroid scores;
- `coarse_scores`: the probe plan's centroid scores from int8 centroids and an int16 query;
- `widen`: float16 rows (a format-5 shard's re-score vectors, as uint16 bits) in float32
  (numpy's own conversion is scalar here: ~1 ms for a search's ~2k rows);
- `gather_widen`: some of those rows, gathered and widened (the re-score's rows).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from memlake.search.index.arrays import F32, I32, I64

#: bm25_top's `agg` codes (SearchParams.bm25_agg)
AGG = {"episode": 0, "max": 1, "top2": 2, "mix": 3}


@cache
def _csc_matvec() -> Callable[..., None] | None:
    """scipy's CSC matrix-vector kernel, y[indices[i]] += data[i] * x[column], a C++ loop run
    with the GIL released: 2.5-3x faster than np.add.at (decision 1317), which adds the same
    float32 products in the same order (None: np.add.at, where scipy's layout is not found).

    Loaded from its extension file alone (~10 ms), not imported: importing it runs
    scipy.sparse's package init, 0.4-0.7 s in a new process (its array API layer probes
    numpy's attributes, which imports numpy.f2py), a third of a cold Lambda's first search,
    which the numpy kernels serve (decision 2513)."""
    name = "scipy.sparse._sparsetools"
    loaded = sys.modules.get(name)  # scipy.sparse imported already (bm25s, when indexing)
    if loaded is not None:
        return getattr(loaded, "csc_matvec", None)
    path = _sparsetools_path()
    if path is None:
        return None
    try:
        loader = importlib.machinery.ExtensionFileLoader(name, str(path))
        spec = importlib.util.spec_from_loader(name, loader, origin=str(path))
        if spec is None:
            return None
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        kernel: Callable[..., None] = module.csc_matvec
    except (ImportError, AttributeError):
        return None
    return kernel


def _sparsetools_path() -> Path | None:
    found = importlib.util.find_spec("scipy")  # finds the package without importing it
    for folder in (found.submodule_search_locations or []) if found is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder, "sparse", "_sparsetools" + suffix)
            if path.is_file():
                return path
    return None


def accumulate(size: int, docs: I32, sat: F32, lo: I64, hi: I64, w: F32) -> F32:
    """scores[d] = sum over terms t of w[t] * sat[i] for the postings i in lo[t]:hi[t] naming
    d, in float32 in term order: exactly what np.add.at(scores, docs, w * sat) adds up."""
    scores = np.zeros(size, dtype=np.float32)
    matvec = _csc_matvec()
    column = np.zeros(2, dtype=np.int32)  # one term's postings: a one-column matrix
    for t in range(len(w)):
        a, b = int(lo[t]), int(hi[t])
        if b <= a:
            continue
        if matvec is None:
            np.add.at(scores, docs[a:b], sat[a:b] * w[t])
        else:
            column[1] = b - a
            matvec(size, 1, column, docs[a:b], sat[a:b], w[t : t + 1], scores)
    return scores


def top_k(scores: F32, k: int) -> I64:
    """Positions of the k best positive scores, best first, equal scores by position (also at
    the k-th place, where np.argpartition alone would pick any of them)."""
    pos = np.flatnonzero(scores > 0)
    if len(pos) > k:
        vals = scores[pos]
        cut = len(vals) - k
        kth = np.partition(vals, cut)[cut]
        keep = vals > kth
        keep[np.flatnonzero(vals == kth)[: k - int(keep.sum())]] = True
        pos = pos[keep]
    return pos[np.argsort(-scores[pos], kind="stable")].astype(np.int64)


def bm25_top(
    n: int,
    e_docs: I32,
    e_sat: F32,
    e_lo: I64,
    e_hi: I64,
    p_docs: I32,
    p_sat: F32,
    p_lo: I64,
    p_hi: I64,
    w: F32,
    p_first: I64,
    p_doc: I32,
    agg: int,
    mix: float,
    decay: float,
    total: float,
    mask: np.ndarray,
    masked: bool,
    k: int,
    floor: float = 0.0,
    scratch: F32 | None = None,
) -> tuple[I64, F32, F32, I64]:
    """The k best of a shard's n docs by BM25 (lucene: each term adds idf w[t] times its
    saturated tf), as (docs, their score as a share of the query's `total` idf, their best
    passage's share, that passage (best_passages: -1 when none scored)). Terms' postings are
    runs lo[t]:hi[t] of (e_docs, e_sat) for episodes and (p_docs, p_sat) for passages;
    `p_first` is each doc's first passage and the passage count at the end, empty for a
    format-1 shard (the episode stands for its passages); `p_doc` is each passage's doc (the
    compiled twin's pruning uses it). `agg`: AGG's code; mix: mix * episode + (1 - mix) * best;
    top2: best + decay * second best. A doc where `masked` and not mask[d] scores 0.
    `floor`: the share below which a doc cannot matter to the caller (the k-th best of the
    shards a search has done, decision 2509): the compiled twin may leave out docs below it,
    this one gives its k best anyway (the same docs at or above it). `scratch`: zeros the
    compiled twin may sum passages in (it leaves them zeros); not used here."""
    episode = accumulate(n, e_docs, e_sat, e_lo, e_hi, w)
    if len(p_first):
        passages = accumulate(int(p_first[n]), p_docs, p_sat, p_lo, p_hi, w)
        if n:
            best = np.maximum.reduceat(passages, p_first[:-1])  # every doc has a passage
        else:
            best = np.zeros(0, np.float32)
    else:
        passages, best = np.zeros(0, np.float32), episode
    score: Any  # float32 all through (numpy's types do not say so)
    if agg == 0:
        score = episode
    elif agg == 1:
        score = best
    elif agg == 2:
        score = best + np.float32(decay) * second_best(n, passages, p_first)
    else:
        score = np.float32(mix) * episode + np.float32(1 - mix) * best
    score = _share(score, total)
    if masked:
        score *= mask
    top = top_k(score, k)
    return top, score[top], _share(best[top], total), best_passages(p_first, top, passages)


def _share(score: F32, total: float) -> F32:
    if total <= 0:
        return np.zeros(len(score), np.float32)
    out: F32 = np.clip(score / np.float32(total), 0.0, 1.0)
    return out


def second_best(n: int, scores: F32, p_first: I64) -> F32:
    """Each doc's second-best positive passage score (0: none)."""
    runner = np.zeros(n, np.float32)
    if not len(p_first):
        return runner
    p_doc = np.repeat(np.arange(n), np.diff(p_first))
    hit = np.flatnonzero(scores > 0)
    docs = p_doc[hit]
    order = np.lexsort((-scores[hit], docs))  # by doc, best passage first
    hit, docs = hit[order], docs[order]
    first = np.ones(len(hit), bool)
    first[1:] = docs[1:] != docs[:-1]
    nxt = np.zeros(len(hit), bool)
    nxt[1:] = first[:-1] & ~first[1:]  # the second passage of a doc
    runner[docs[nxt]] = scores[hit[nxt]]
    return runner


def best_passages(p_first: I64, docs: I64, scores: F32) -> I64:
    """The best passage of each of `docs` by passage `scores` (-1: none scored > 0); the
    first of equals. Vectorised over the docs' passage runs (no loop per doc)."""
    out = np.full(len(docs), -1, np.int64)
    if not len(scores) or not len(docs):
        return out
    lo = p_first[docs]
    counts = p_first[docs + 1] - lo  # >= 1: every doc has a passage
    starts = np.zeros(len(docs), np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    rows = np.repeat(lo - starts, counts) + np.arange(int(counts.sum()))
    vals = scores[rows]
    best = np.maximum.reduceat(vals, starts)
    at_best = np.flatnonzero(vals == np.repeat(best, counts))
    run = np.repeat(np.arange(len(docs)), counts)[at_best]
    first = at_best[np.r_[True, run[1:] != run[:-1]]]  # the first best row of each run
    return np.where(best > 0, rows[first], out)


def top_docs(
    rows: I64, exact: F32, want: int, chunk_doc: I32, chunk_passage: I32, n: int, k: int
) -> tuple[I64, F32, F32, I64]:
    """Candidate `rows` with their `exact` cosines: the `want` best (equal ones by position)
    grouped into docs, the k docs whose best row is best: (docs, best cosine, second-best
    cosine among the kept rows (0: none), the best row's passage)."""
    order = np.argsort(-exact, kind="stable")[:want]
    rows, scores = rows[order], exact[order]
    docs = chunk_doc[rows].astype(np.int64)
    _, first = np.unique(docs, return_index=True)
    first.sort()  # first (best) row of each doc, in score order
    top = first[:k]
    rest = np.ones(len(docs), bool)
    rest[first] = False  # the later rows: the first of each doc is its second best
    _, nxt = np.unique(docs[rest], return_index=True)
    second = np.zeros(n, np.float32)
    second[docs[rest][nxt]] = scores[rest][nxt]
    passage = chunk_passage[rows[top]].astype(np.int64)
    return docs[top], scores[top], second[docs[top]], passage


def plan_cut(every: F32, budget: int) -> float:
    """The `budget`-th best of `every` (-inf: a budget of all of them; inf: none), as
    np.partition gives it (NaN counts as the highest): plan_lists' `cut`."""
    if budget <= 0:
        return float(np.inf)
    if budget >= len(every):
        return float(-np.inf)
    return float(np.partition(every, len(every) - budget)[len(every) - budget])


def plan_lists(every: F32, starts: I64, cut: float, least: int, most: I64) -> tuple[I64, I64]:
    """The probe plan's lists (decision 1303): `every` is each shard's centroid scores one
    after the other (shard i's from starts[i] to starts[i + 1]); the scores at or above `cut`
    (plan_cut: the budget-th best over all of them) decide how many lists each shard takes (at
    least `least`, at most `most[i]`), each its own best, best first, equal scores by list
    number. (lists of every shard one after the other, how many each shard took)."""
    shards = len(starts) - 1
    counts = np.zeros(shards, np.int64)
    parts = []
    for i in range(shards):
        s = every[starts[i] : starts[i + 1]]
        take = min(len(s), max(least, min(int(most[i]), int((s >= cut).sum()))))
        parts.append(np.argsort(-s, kind="stable")[:take].astype(np.int64))
        counts[i] = take
    lists = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return lists, counts


#: the float32 value of every float16 (indexed by its bits): widen's table
HALF_FLOATS: F32 = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)


def widen(halves: Any, floats: F32) -> F32:
    """float16 values (their bits as uint16, rows x dim) as float32, each looked up in
    `floats` (HALF_FLOATS: numpy's own float16 conversion, made once)."""
    widened: F32 = floats[halves]
    return widened


def gather_widen(halves: Any, rows: Any) -> F32:
    """Rows `rows` of `halves` (float16 bits, rows x dim) as float32; IndexError for a row
    outside them (numpy's indexing would take a negative one from the end)."""
    if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= len(halves)):
        raise IndexError("a re-scored row is not a row of the shard's vectors")
    return widen(halves[rows], HALF_FLOATS)


def coarse_scores(codes: Any, q16: Any, scale: Any, q_scale: float) -> F32:
    """The probe plan's centroid scores from int8 centroids: each int8 row of `codes` times the
    int16 query `q16`, exactly (float64 BLAS a block of rows at a time: every partial sum is
    an integer below 2**31, so the order of the sums cannot change it), times the row's
    `scale` and `q_scale` in float64, as float32."""
    dots = np.empty(len(codes), np.float64)
    q = q16.astype(np.float64)
    for lo in range(0, len(codes), 4096):
        dots[lo : lo + 4096] = codes[lo : lo + 4096].astype(np.float64) @ q
    with np.errstate(invalid="ignore"):  # a damaged centroid's scale (NaN, inf): NaN
        out: F32 = (dots * scale * q_scale).astype(np.float32)
    return out
