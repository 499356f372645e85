"""The per-shard hot loops compiled by numba, twins of memlake.search.index.kernels.numpy_twins
(same arguments, same results: the same float32 operations in the same order, ties by
position), `nogil=True` so that the BM25 task on the caller's thread runs beside the vector
tasks on a pool thread (decision 2502), `cache=True` so that a process loads them compiled.

Imported only by memlake.search.index.kernels, which sets numba's cache directory and CPU
first and compiles or loads each function for the signatures in SIGNATURES only (no call
compiles: the dispatchers refuse new signatures). Postings are checked when a shard is read
(shard_source.checked_postings), as for scipy's kernel: these loops do not bounds-check.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import types

_RO_I32 = types.Array(types.int32, 1, "C", readonly=True)
_RO_I64 = types.Array(types.int64, 1, "C", readonly=True)
_RO_F32 = types.Array(types.float32, 1, "C", readonly=True)
_RO_BOOL = types.Array(types.boolean, 1, "C", readonly=True)
_RO_U16_2D = types.Array(types.uint16, 2, "C", readonly=True)
_INT, _FLOAT = types.int64, types.float64

#: the one signature of each kernel (read-only array types accept writable arrays too)
SIGNATURES: dict[str, tuple[Any, ...]] = {
    "bm25_top": (
        _INT, _RO_I32, _RO_F32, _RO_I64, _RO_I64, _RO_I32, _RO_F32, _RO_I64, _RO_I64, _RO_F32,
        _RO_I64, _INT, _FLOAT, _FLOAT, _FLOAT, _RO_BOOL, types.boolean, _INT,
    ),
    "best_passages": (_RO_I64, _RO_I64, _RO_F32),
    "top_docs": (_RO_I64, _RO_F32, _INT, _RO_I32, _RO_I32, _INT, _INT),
    "plan_lists": (_RO_F32, _RO_I64, _INT, _INT, _RO_I64),
    "widen": (_RO_U16_2D, _RO_F32),
}  # fmt: skip

_jit = numba.njit(nogil=True, cache=True)


@_jit
def _accumulate(size, docs, sat, lo, hi, w):  # type: ignore[no-untyped-def]
    scores = np.zeros(size, np.float32)
    for t in range(w.shape[0]):
        wt = w[t]
        # unsigned indices: numba checks a signed one for wrapping around (2x slower here)
        for i in range(np.uint64(lo[t]), np.uint64(hi[t])):
            scores[np.uint32(docs[i])] += sat[i] * wt
    return scores


@_jit
def _worse(a, at, b, bt):  # type: ignore[no-untyped-def]
    """Is score `a` at position `at` below `b` at `bt` in the top order (best score first,
    equal scores by position)?"""
    return a < b or (a == b and at > bt)


@_jit
def _top_k(scores, k):  # type: ignore[no-untyped-def]
    # the twin's set and order (the k best positive scores, equal ones by position) from one
    # pass keeping a heap of the k best, its root the worst of them: a new score displaces it
    # only when higher, as a later equal one comes after it. np.partition over every positive
    # score cost ~0.3 ms for a 32k-doc shard, most of its BM25 top list once postings are summed
    kept = np.empty(max(k, 0), np.float32)
    at = np.empty(max(k, 0), np.int64)
    m = 0
    for d in range(scores.shape[0]):
        v = scores[d]
        if v <= 0:
            continue
        if m < k:  # not full: sift up from the end
            i = m
            m += 1
            while i > 0:
                up = (i - 1) >> 1
                if not _worse(v, d, kept[up], at[up]):
                    break
                kept[i], at[i] = kept[up], at[up]
                i = up
            kept[i], at[i] = v, d
        elif k > 0 and v > kept[0]:  # better than the worst kept: it goes, sift down
            i = 0
            while True:
                c = 2 * i + 1
                if c >= m:
                    break
                if c + 1 < m and _worse(kept[c + 1], at[c + 1], kept[c], at[c]):
                    c += 1
                if not _worse(kept[c], at[c], v, d):
                    break
                kept[i], at[i] = kept[c], at[c]
                i = c
            kept[i], at[i] = v, d
    pos = np.sort(at[:m])
    neg = np.empty(m, np.float32)
    for i in range(m):
        neg[i] = -scores[pos[i]]
    return pos[np.argsort(neg, kind="mergesort")]


@_jit
def _share(s, total, t32):  # type: ignore[no-untyped-def]
    if total <= 0:
        return np.float32(0)
    v = s / t32
    if v < 0:
        return np.float32(0)
    if v > 1:
        return np.float32(1)
    return v


@_jit
def bm25_top(  # type: ignore[no-untyped-def]
    n, e_docs, e_sat, e_lo, e_hi, p_docs, p_sat, p_lo, p_hi, w, p_first, agg, mix, decay,
    total, mask, masked, k,
):  # fmt: skip
    episode = _accumulate(n, e_docs, e_sat, e_lo, e_hi, w)
    second = np.zeros(n, np.float32)
    if p_first.shape[0] > 0:
        passages = _accumulate(p_first[n], p_docs, p_sat, p_lo, p_hi, w)
        best = np.empty(n, np.float32)
        for d in range(n):  # the run's max, as np.maximum.reduceat gives it
            lo, hi = np.uint64(p_first[d]), np.uint64(p_first[d + 1])
            b1 = passages[lo] if lo < passages.shape[0] else np.float32(0)
            for j in range(lo + 1, hi):
                b1 = max(b1, passages[j])  # a select, not a branch: ~half mispredicted
            best[d] = b1
        if agg == 2:  # the second best positive passage (its own loop: 7x slower with the max)
            for d in range(n):
                top1, b2 = np.float32(0), np.float32(0)
                for j in range(np.uint64(p_first[d]), np.uint64(p_first[d + 1])):
                    v = passages[j]
                    if v > top1:
                        b2, top1 = top1, v
                    elif v > b2:
                        b2 = v
                second[d] = b2
    else:
        passages = np.zeros(0, np.float32)
        best = episode
    t32 = np.float32(total)
    a32, b32, dec32 = np.float32(mix), np.float32(1 - mix), np.float32(decay)
    score = np.empty(n, np.float32)
    for d in range(n):
        if agg == 0:
            s = episode[d]
        elif agg == 1:
            s = best[d]
        elif agg == 2:
            s = best[d] + dec32 * second[d]
        else:
            s = a32 * episode[d] + b32 * best[d]
        v = _share(s, total, t32)
        if masked and not mask[d]:
            v = np.float32(0)
        score[d] = v
    top = _top_k(score, k)
    m = top.shape[0]
    top_score = np.empty(m, np.float32)
    top_best = np.empty(m, np.float32)
    for i in range(m):
        top_score[i] = score[top[i]]
        top_best[i] = _share(best[top[i]], total, t32)
    return top, top_score, top_best, passages


@_jit
def best_passages(p_first, docs, scores):  # type: ignore[no-untyped-def]
    out = np.full(docs.shape[0], -1, np.int64)
    if scores.shape[0] == 0:
        return out
    for i in range(docs.shape[0]):
        lo, hi = p_first[docs[i]], p_first[docs[i] + 1]
        at, b = lo, scores[lo]
        for j in range(lo + 1, hi):
            if scores[j] > b:
                at, b = j, scores[j]
        if b > 0:
            out[i] = at
    return out


@_jit
def top_docs(rows, exact, want, chunk_doc, chunk_passage, n, k):  # type: ignore[no-untyped-def]
    order = np.argsort(-exact, kind="mergesort")[:want]
    seen = np.zeros(n, np.uint8)
    second = np.zeros(n, np.float32)
    cap = min(k, order.shape[0])
    docs = np.empty(cap, np.int64)
    best = np.empty(cap, np.float32)
    passage = np.empty(cap, np.int64)
    got = 0
    for i in order:
        row = rows[i]
        d = chunk_doc[row]
        if seen[d] == 0:
            seen[d] = 1
            if got < cap:
                docs[got], best[got], passage[got] = d, exact[i], chunk_passage[row]
                got += 1
        elif seen[d] == 1:
            seen[d] = 2
            second[d] = exact[i]
    runner = np.empty(got, np.float32)
    for i in range(got):
        runner[i] = second[docs[i]]
    return docs[:got], best[:got], runner, passage[:got]


@_jit
def plan_lists(every, starts, budget, least, most):  # type: ignore[no-untyped-def]
    total = every.shape[0]
    cut = -np.inf if budget > 0 else np.inf
    if 0 < budget < total:
        cut = np.partition(every, total - budget)[total - budget]
    shards = starts.shape[0] - 1
    counts = np.zeros(shards, np.int64)
    above = np.zeros(shards, np.int64)
    for i in range(shards):
        size = starts[i + 1] - starts[i]
        for j in range(starts[i], starts[i + 1]):
            if every[j] >= cut:
                above[i] += 1
        counts[i] = min(size, max(least, min(most[i], above[i])))
    lists = np.empty(counts.sum(), np.int64)
    at = 0
    for i in range(shards):
        s = every[starts[i] : starts[i + 1]]
        if counts[i] <= above[i]:  # its best are among those at or above the cut: sort those
            pick = np.empty(above[i], np.int64)
            got = 0
            for j in range(s.shape[0]):
                if s[j] >= cut:
                    pick[got] = j
                    got += 1
            order = pick[np.argsort(-s[pick], kind="mergesort")]
        else:  # `least` asks for more than the cut gives: all of its scores sorted
            order = np.argsort(-s, kind="mergesort")
        lists[at : at + counts[i]] = order[: counts[i]]
        at += counts[i]
    return lists, counts


@_jit
def widen(halves, floats):  # type: ignore[no-untyped-def]
    """float16 values (their bits, rows x dim) as float32, each looked up in the table of
    every half's float32 (`floats`, 256 KiB): the portable "generic" CPU runs that 2x faster
    than moving the bits by shifts and a scale (0.38 against 0.77 ms for 1,900 rows of 384)."""
    n, dim = halves.shape
    out = np.empty((n, dim), np.float32)
    for i in range(n):
        src, o = halves[i], out[i]
        for j in range(dim):
            o[j] = floats[src[j]]
    return out
