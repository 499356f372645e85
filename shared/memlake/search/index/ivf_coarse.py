"""The probe plan's centroid scores from int8 centroids (decision 2507).

The plan (ivf.plan_probes, decision 1303) ranks every centroid of every IVF shard of a search
by its inner product with the query. Reading every float32 centroid is its cost: at 300k
episodes ~47k centroids, 72 MB, 5-8 ms a search. From ivf.PLAN_INT8_FROM centroids the plan
reads an int8 copy instead (a quarter of the bytes): each centroid on its own scale (its
largest magnitude maps to 127), made once a loaded shard at its first plan, times the query
in int16 (its largest magnitude maps to as much as the int32 sums allow, 32,767 up to 516
dims). The kernel (`coarse_scores`) sums the products exactly in integers and scales them.

The score is c'.q' instead of c.q. By Cauchy-Schwarz the difference is at most
|c - c'| |q| + |c'| |q - q'|: ~0.009 for a unit centroid of 384 dims at most, ~0.0005 typical,
where the plan's cut separates scores of ~0.3-0.6. A list whose score is that close to the cut
may be taken instead of its neighbour, nothing more; recall was measured the same (2507).
Both kernels give the same integers and the same float64 products, so numba's and numpy's plans
are the same.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memlake.search.index import kernels
from memlake.search.index.arrays import F32

#: rows of centroids quantised at a time (bounds the scratch: 4096 x dim x 4 bytes)
BLOCK = 4096


@dataclass(frozen=True)
class Coarse8:
    """A shard's centroids in int8: centroid i is about codes[i] * scale[i]."""

    codes: Any  # int8 (nlist, dim)
    scale: Any  # float64 (nlist,)


def quantise(centroids: F32) -> Coarse8:
    """Each centroid as int8 on its own scale (its largest magnitude maps to 127)."""
    n, dim = centroids.shape
    codes = np.empty((n, dim), np.int8)
    scale = np.empty(n, np.float64)
    for lo in range(0, n, BLOCK):  # in float32: ~25 ms for 100k's 15.6k centroids
        c = np.asarray(centroids[lo : lo + BLOCK], np.float32)
        top = np.abs(c).max(axis=1) if dim else np.zeros(len(c), np.float32)
        s = np.where(top == 0, np.float32(1), top / np.float32(127))  # NaN, inf: damaged
        with np.errstate(invalid="ignore"):
            q = np.rint(c / s[:, None])
        q[~np.isfinite(q)] = 0  # a damaged centroid's codes; its scale gives it NaN scores
        codes[lo : lo + BLOCK] = np.clip(q, -127, 127)
        scale[lo : lo + BLOCK] = s
    return Coarse8(codes, scale)


class Quantised:
    """An Ivf's int8 centroids, made at the first plan that asks (thread-safe, once); `held`
    is told their bytes then (a cached shard counts them in the cache's bound)."""

    def __init__(self, centroids: F32, held: Callable[[int], None] | None = None) -> None:
        self._centroids = centroids
        self._held = held
        self._made: Coarse8 | None = None
        self._lock = threading.Lock()

    def get(self) -> Coarse8:
        if self._made is None:
            with self._lock:
                if self._made is None:
                    made = quantise(self._centroids)
                    self._made = made
                    if self._held is not None:
                        self._held(int(made.codes.nbytes + made.scale.nbytes))
        return self._made


def query16(q: F32) -> tuple[Any, float]:
    """The query in int16 and its scale: its largest magnitude maps to the most that keeps a
    sum of dim products with int8 in an int32 (32,767 up to 516 dims)."""
    dim = len(q)
    most = min(32767, (2**31 - 1) // (127 * max(1, dim)))
    q64 = q.astype(np.float64)
    top = float(np.abs(q64).max()) if dim else 0.0
    scale = top / most if top > 0 else 1.0
    q16 = np.minimum(np.maximum(np.rint(q64 / scale), -most), most)  # np.clip's values
    return q16.astype(np.int16), scale


def scores(quantised: Sequence[Quantised], q: F32) -> list[F32]:
    """Each shard's centroid scores for the query `q` (dim,) from its int8 centroids."""
    q16, q_scale = query16(q)
    kernel = kernels.active().coarse_scores
    out = []
    for one in quantised:
        made = one.get()
        out.append(kernel(made.codes, q16, made.scale, q_scale))
    return out
