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
_RO_I16 = types.Array(types.int16, 1, "C", readonly=True)
_RO_F64 = types.Array(types.float64, 1, "C", readonly=True)
_RO_I8_2D = types.Array(types.int8, 2, "C", readonly=True)
_INT, _FLOAT = types.int64, types.float64
_F32 = types.Array(types.float32, 1, "C")  # written: bm25_top's scratch

#: the one signature of each kernel (read-only array types accept writable arrays too)
SIGNATURES: dict[str, tuple[Any, ...]] = {
    "bm25_top": (
        _INT, _RO_I32, _RO_F32, _RO_I64, _RO_I64, _RO_I32, _RO_F32, _RO_I64, _RO_I64, _RO_F32,
        _RO_I64, _RO_I32, _INT, _FLOAT, _FLOAT, _FLOAT, _RO_BOOL, types.boolean, _INT, _FLOAT,
        _F32,
    ),
    "best_passages": (_RO_I64, _RO_I64, _RO_F32),
    "top_docs": (_RO_I64, _RO_F32, _INT, _RO_I32, _RO_I32, _INT, _INT),
    "plan_lists": (_RO_F32, _RO_I64, _FLOAT, _INT, _RO_I64),
    "widen": (_RO_U16_2D, _RO_F32),
    "gather_widen": (_RO_U16_2D, _RO_I64),
    "coarse_scores": (_RO_I8_2D, _RO_I16, _RO_F64, _FLOAT),
}  # fmt: skip

_jit = numba.njit(nogil=True, cache=True)

# BM25's kernels live in their own file (numba caches a function by the file that defines it)
from memlake.search.index.kernels.numba_bm25 import best_passages, bm25_top  # noqa: E402

__all__ = [
    "SIGNATURES", "best_passages", "bm25_top", "coarse_scores", "gather_widen", "plan_lists",
    "top_docs", "widen",
]  # fmt: skip


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
def plan_lists(every, starts, cut, least, most):  # type: ignore[no-untyped-def]
    # the cut comes from numpy (numpy_twins.plan_cut): numba's np.partition took 0.71 ms over
    # 46,800 centroid scores, numpy's 0.055 (decision 2509)
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
    bits = every.view(np.uint32)
    at = 0
    for i in range(shards):
        lo = starts[i]
        if counts[i] <= above[i]:  # its best are among those at or above the cut: sort those
            order = _best_first(every, bits, lo, starts[i + 1], cut, above[i])
        else:  # `least` asks for more than the cut gives: all of its scores sorted
            order = np.argsort(-every[lo : starts[i + 1]], kind="mergesort")
        lists[at : at + counts[i]] = order[: counts[i]]
        at += counts[i]
    return lists, counts


@_jit
def _best_first(every, bits, lo, hi, cut, count):  # type: ignore[no-untyped-def]
    """The positions (from lo) of every[lo:hi] at or above `cut`, best first, equal scores by
    position: one sort of keys (the score's bits in float order, inverted, then the position;
    a mergesort of the scores took 0.41 ms over a 300k plan's picks)."""
    keys = np.empty(count, np.uint64)
    got = 0
    for j in range(lo, hi):
        if every[j] >= cut:  # never NaN
            u = np.uint64(bits[j])
            if u == 0x80000000:  # -0.0 ranks as 0.0
                u = np.uint64(0)
            ordered = (u ^ 0xFFFFFFFF) if u & 0x80000000 else (u | 0x80000000)
            keys[got] = ((0xFFFFFFFF - ordered) << 32) | np.uint64(j - lo)
            got += 1
    keys.sort()
    out = np.empty(count, np.int64)
    for i in range(count):
        out[i] = np.int64(keys[i] & 0xFFFFFFFF)
    return out


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


#: 2**112: a half's magnitude bits moved into a float32 (<< 13) read 2**-112 of its value
_TWO_112 = np.float32(2.0**112)


@_jit
def gather_widen(halves, rows):  # type: ignore[no-untyped-def]
    """Rows `rows` of `halves` (float16 bits, rows x dim) as float32: the re-score's gather
    and widening in one pass (vector_scan.gathered). Each half's magnitude bits are moved into
    the float32's place and scaled by 2**112, which is exact for zeros, subnormals and normal
    halves alike; infinities and NaNs (exponent all ones) get the float32's all-ones exponent,
    then the sign. Three loops over a row, each vectorised by LLVM: after a pass over memory
    this cost 0.58 against 0.77 ms for `widen`'s gather and table (960 rows of 384; the
    table's 256 KiB are read cold). A row outside `halves` raises IndexError."""
    n, dim = len(rows), halves.shape[1]
    out = np.empty((n, dim), np.float32)
    bits = out.view(np.uint32)
    for i in range(n):
        r = rows[i]
        if r < 0 or r >= halves.shape[0]:
            raise IndexError("a re-scored row is not a row of the shard's vectors")
        src, b, o = halves[r], bits[i], out[i]
        for j in range(dim):
            b[j] = (np.uint32(src[j]) & np.uint32(0x7FFF)) << np.uint32(13)
        for j in range(dim):
            o[j] = o[j] * _TWO_112
        for j in range(dim):
            h = np.uint32(src[j])
            special = np.uint32(0) - np.uint32((h & np.uint32(0x7C00)) == np.uint32(0x7C00))
            b[j] |= (special & np.uint32(0x7F800000)) | ((h & np.uint32(0x8000)) << np.uint32(16))
    return out


@_jit
def coarse_scores(codes, q16, scale, q_scale):  # type: ignore[no-untyped-def]
    """The probe plan's centroid scores from int8 centroids (memlake.search.index.ivf_coarse):
    each int8 row of `codes` (rows x dim) times the int16 query `q16`, summed exactly in
    integers (pairs by AVX2's vpmaddwd on x86-64-v3: ~2.4x faster than BLAS over the float32
    centroids, the generic build ~1.2x slower; tests/bench/coarse_kernel_bench.py, numbers in
    decision 2507), then times the row's `scale` and `q_scale` in float64, as float32. The
    float products in a loop of their own: in the same loop they kept LLVM from vectorising the
    sums (3.1 against 1.0 ms, measured while writing it)."""
    n, dim = codes.shape
    dots = np.empty(n, np.int32)
    for i in range(n):
        row = codes[i]
        acc = np.int32(0)
        for j in range(dim):
            acc += np.int16(row[j]) * q16[j]
        dots[i] = acc
    out = np.empty(n, np.float32)
    for i in range(n):
        out[i] = np.float32(np.float64(dots[i]) * scale[i] * q_scale)
    return out
