"""The order an IVF shard stores its lists in: near centroids side by side (decision 4401).

A search reads the lists whose centroids are nearest its query, and then the re-score rows of
the best candidates in them, both in list order (ivf_codes, shard_build's list_vectors). On
object storage every run of lists that do not lie together is a ranged GET more. FAISS's
k-means numbers its centroids in no order of space, so a query's lists were spread over the
whole shard: at 10k x 20 a cold search made ~70 ranged GETs for its re-score rows alone.

`locality_order` numbers the lists so that centroids near each other get numbers near each
other: a principal-direction tree (split the centroids at the median of their projection on
their first principal direction, recursively), read leaf by leaf. A query's probed lists then
fall into a few runs, which the reader's coalescing (shard_source.LIST_GAP, ROWS_GAP) reads as
a few GETs. Nothing else changes: a list keeps its centroid, rows and codes, only its number
moves, so shards written before this read as they did. Written by hand: neither FAISS nor numpy
orders points along a locality-preserving curve, and the tree is ~40 lines.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from memlake.search.index.arrays import F32

I64 = npt.NDArray[np.int64]

#: power iterations for a node's principal direction (it only has to split well, not converge)
POWER_STEPS = 6
#: nodes of at most this many centroids are ordered by their projection alone
LEAF = 8


def locality_order(centroids: F32, seed: int = 1234) -> I64:
    """A permutation of range(len(centroids)): `centroids[perm]` stores near centroids near
    each other. Deterministic for the same centroids and seed."""
    n = len(centroids)
    if n <= 2:
        return np.arange(n, dtype=np.int64)
    x = np.asarray(centroids, np.float32)
    start = np.asarray(np.random.default_rng(seed).standard_normal(x.shape[1]), np.float32)
    out: list[I64] = []
    stack: list[I64] = [np.arange(n, dtype=np.int64)]
    while stack:  # depth first, the lower half first: the leaves come out in order
        members = stack.pop()
        side = _projection(x[members], start)
        ranked = members[np.argsort(side, kind="stable")]
        if len(members) <= LEAF:
            out.append(ranked)
            continue
        half = len(ranked) // 2
        stack.append(ranked[half:])
        stack.append(ranked[:half])
    return np.concatenate(out)


def _projection(x: F32, start: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each row of `x` projected on the rows' first principal direction (power iteration)."""
    centred = x - x.mean(axis=0)
    v = start
    for _ in range(POWER_STEPS):
        w = centred.T @ (centred @ v)
        norm = float(np.linalg.norm(w))
        if not np.isfinite(norm) or norm == 0.0:
            break
        v = w / norm
    return centred @ v


def renumber(centroids: F32, lists: I64, seed: int = 1234) -> tuple[F32, I64]:
    """`centroids` in locality order and each row's list number in that order."""
    perm = locality_order(centroids, seed)
    new_number = np.empty(len(perm), np.int64)
    new_number[perm] = np.arange(len(perm), dtype=np.int64)
    return np.ascontiguousarray(centroids[perm]), new_number[np.asarray(lists, np.int64)]
