"""The probe plan's centroid scores from an int8 first pass (decision 2507).

The plan (ivf.plan_probes, decision 1303) needs the `budget` best centroids over every IVF
shard of a search, and the float32 inner product of each list it takes. Reading every float32
centroid is its cost: at 300k episodes ~47k centroids, 72 MB, ~5 ms a search. Here each
shard's centroids also have an int8 copy (a scale per centroid, made once a loaded shard, at
its first plan), and a plan reads that first (`coarse_dots`: AVX2 sums pairs of int8 products
on x86-64-v3, 1.1 ms for the 47k), then computes the float32 product only for the centroids
that can reach the cut:

- For centroid c, its int8 version c' and the query's q', Cauchy-Schwarz bounds the error of
  the approximate score: |c.q - c'.q'| <= |c - c'| |q| + |c'| |q - q'|, plus float32's own
  rounding of c.q (dim * 2**-24 * |c| |q|, doubled for margin).
- The budget-th best lower bound (approximate score minus its error) is at or below the true
  cut, so a centroid whose upper bound is below it is below the cut: its float32 score is never
  needed, and it is given -inf. Every centroid at or above the cut keeps its float32 score.

plan_lists then picks exactly the lists it picked from every float32 score: the budget-th best
score is the same, so is each shard's count of centroids at or above it, and so are the ones
it sorts. Both kernels' `coarse_dots` give the same integers, and what follows is shared numpy,
so numba's and numpy's plans are the same. Not for a plan that may take lists below the cut (a
shard's `least`) or every list (a budget at or above their count): those score every centroid.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memlake.search.index import kernels
from memlake.search.index.arrays import F32

#: rows of centroids quantised at a time (bounds the float64 scratch: 4096 x dim x 8 bytes)
BLOCK = 4096


@dataclass(frozen=True)
class Coarse8:
    """A shard's centroids in int8, with what bounds their error: centroid i is about
    codes[i] * terms[0, i]; terms[1, i] is |centroid - that|, terms[2, i] |that| and
    terms[3, i] |centroid| (one float64 array: one argument of the kernel)."""

    codes: Any  # int8 (nlist, dim)
    terms: Any  # float64 (4, nlist)


def quantise(centroids: F32) -> Coarse8:
    """Each centroid as int8 on its own scale (its largest magnitude maps to 127)."""
    n, dim = centroids.shape
    codes = np.empty((n, dim), np.int8)
    terms = np.empty((4, n), np.float64)
    for lo in range(0, n, BLOCK):
        c = centroids[lo : lo + BLOCK].astype(np.float64)
        top = np.abs(c).max(axis=1) if dim else np.zeros(len(c))
        scale = np.where(top > 0, top / 127, 1.0)
        q = np.clip(np.rint(c / scale[:, None]), -127, 127)
        codes[lo : lo + BLOCK] = q
        back = q * scale[:, None]
        terms[0, lo : lo + BLOCK] = scale
        terms[1, lo : lo + BLOCK] = np.linalg.norm(c - back, axis=1)
        terms[2, lo : lo + BLOCK] = np.linalg.norm(back, axis=1)
        terms[3, lo : lo + BLOCK] = np.linalg.norm(c, axis=1)
    return Coarse8(codes, terms)


class Quantised:
    """An Ivf's int8 centroids, made at the first plan that asks (thread-safe, once)."""

    def __init__(self, centroids: F32) -> None:
        self._centroids = centroids
        self._made: Coarse8 | None = None
        self._lock = threading.Lock()

    def get(self) -> Coarse8:
        if self._made is None:
            with self._lock:
                if self._made is None:
                    self._made = quantise(self._centroids)
        return self._made


@dataclass(frozen=True)
class Query8:
    """The query in int8 (q8 * scale is about it) with what bounds the plan's error: |query -
    that| (err), |query| (size) and float32's rounding of a product per unit of |c| (rounding)."""

    q8: Any
    scale: float
    err: float
    size: float
    rounding: float

    @classmethod
    def of(cls, q: F32) -> Query8:
        q64 = q.astype(np.float64)
        top = float(np.abs(q64).max()) if len(q64) else 0.0
        scale = top / 127 if top > 0 else 1.0
        q8 = np.clip(np.rint(q64 / scale), -127, 127)
        size = float(np.linalg.norm(q64))
        err = float(np.linalg.norm(q64 - q8 * scale))
        return cls(q8.astype(np.int8), scale, err, size, 2 * len(q64) * 2.0**-24 * size)


def estimate(made: Coarse8, query: Query8) -> tuple[Any, Any]:
    """The lowest and highest each centroid's float32 product with the query can be (float64):
    its approximate score (the int8 product scaled) minus and plus the bound of its error. One
    kernel call (coarse_bounds), the same numbers in numba's and numpy's."""
    low, high = kernels.active().coarse_bounds(
        made.codes, query.q8, made.terms, query.scale, query.size, query.err, query.rounding
    )
    return low, high


def scores(
    centroids: Sequence[F32], quantised: Sequence[Quantised], q: F32, budget: int
) -> list[F32]:
    """Each shard's centroid scores for the query `q` (dim,) as the plan needs them: float32
    inner products for every centroid that may be among the `budget` best over all shards,
    -inf for the others (0 < budget < all centroids)."""
    query = Query8.of(q)
    lows, highs = zip(*(estimate(one.get(), query) for one in quantised), strict=True)
    low = np.concatenate(lows)
    floor = low[np.argpartition(low, len(low) - budget)[len(low) - budget]]
    out = []
    for c, high in zip(centroids, highs, strict=True):
        near = np.flatnonzero(high >= floor)
        got = np.full(len(high), -np.inf, np.float32)
        got[near] = c[near] @ q
        out.append(got)
    return out
