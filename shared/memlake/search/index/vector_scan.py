"""Vector scans every shard kind shares (docs/decisions/1202, 1301): the FAISS filter of a
row mask, the exact re-score of candidates, and the flat index of a shard without IVF."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from memlake.search.index import kernels
from memlake.search.index.arrays import F32, I64
from memlake.search.index.kernels import numpy_twins

if TYPE_CHECKING:
    import faiss


def row_filter(rows_mask: Any) -> tuple[Any, Any]:
    """FAISS search parameters allowing only the rows of `rows_mask`, and what must stay alive
    while they are used (the selector reads the bitmap during the search)."""
    import faiss

    bits = np.packbits(rows_mask, bitorder="little")
    sel = faiss.IDSelectorBitmap(len(rows_mask), faiss.swig_ptr(bits))
    params = faiss.SearchParameters()
    params.sel = sel
    return params, (bits, sel)


def exact_scores(rows: Any, vectors: Any, q: F32) -> F32:
    """The exact inner products of candidate `rows` of `vectors` with `q` (1 x dim): the rows
    gathered (read by ranges from a ranged shard) and one product, without the GIL. The
    product is einsum's, not BLAS's: BLAS sums a block's last rows in another order, so a row
    scored in a block of 3 came out 1 ulp from the same row in a block of 960, and a search
    that re-scores some rows early (decision 2511) must give each row the score it gets with
    any other rows; einsum sums every row alike (~2x BLAS's time: +27 us for 960 rows)."""
    exact: F32 = np.asarray(np.einsum("ij,j->i", gathered(rows, vectors), q[0]), np.float32)
    return exact


def gathered(rows: Any, vectors: Any) -> F32:
    """Rows `rows` of `vectors` in float32: a format-5 shard's float16 rows held in memory
    gathered and widened by one kernel (gather_widen), a ranged shard's read by ranges and
    widened by the kernel (numpy's own conversion of a search's ~2k rows took ~1 ms of its ~5,
    decision 2504), older formats' float32 rows as they are."""
    at = np.asarray(rows, np.int64)
    if (
        isinstance(vectors, np.ndarray)
        and vectors.dtype == np.float16
        and vectors.flags.c_contiguous
    ):
        halves = vectors.view(np.uint16)
        return kernels.active().gather_widen(halves, at)  # type: ignore[no-any-return]
    block = np.asarray(vectors[at])
    if block.dtype != np.float16:
        return np.asarray(block, np.float32)
    halves = np.ascontiguousarray(block).view(np.uint16)
    return kernels.active().widen(halves, numpy_twins.HALF_FLOATS)  # type: ignore[no-any-return]


def rescored(rows: Any, vectors: F32, q: F32, want: int) -> tuple[I64, F32]:
    """The `want` best of candidate `rows` by exact inner product with `q` (1 x dim), best
    first, equal scores in the candidates' order (as kernels.top_docs takes them): (rows,
    exact scores)."""
    exact = exact_scores(rows, vectors, q)
    order = np.argsort(-exact, kind="stable")[:want]
    return np.asarray(rows, np.int64)[order], exact[order]


def flat_index(vectors: F32, dim: int, sq8: bool) -> faiss.Index:
    """An exact flat index of `vectors`, or (sq8) one of 8-bit codes trained on them."""
    import faiss  # lazily: a cold Lambda that only lists tools never loads it

    index: faiss.Index
    vectors = np.ascontiguousarray(vectors, np.float32)
    if sq8:
        qt, ip = faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        index = faiss.IndexScalarQuantizer(dim, qt, ip)
        index.train(vectors)
    else:
        index = faiss.IndexFlatIP(dim)
    if len(vectors):
        index.add(vectors)
    return index
