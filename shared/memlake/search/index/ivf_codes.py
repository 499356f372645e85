"""How an IVF shard codes its list entries (docs/decisions/1301, 1316).

- "pq4" (shard format 4, written today): product quantisation with 4-bit sub-codes, scanned
  by FAISS's fast-scan kernels (IndexIVFPQFastScan, SIMD lookup tables). dim / 4 sub-quantisers
  of 16 centroids each (384 dims: 96 sub-codes, 48 bytes a vector, 8x smaller than SQ8), trained
  on the k-means sample, codes of the vectors themselves (not residuals, as 1301's SQ8). A
  list's codes are stored already packed the way FAISS scans them: blocks of 32 vectors
  (`block_size` bytes each, the last padded), so adding a list to the index is one copy and a
  ranged reader fetches a list as one byte range. Arrays: ivf_pq (dim/4 * 16, 4) float32
  centroids, ivf_codes (blocks, block_size) uint8; list i's blocks follow from the entry
  counts (`code_starts`), so nothing stored can disagree with ivf_offsets.
- "sq8" (format 3, read only): 8-bit scalar quantisation of each dimension; ivf_sq (2, dim)
  float32 and ivf_codes (rows, dim) uint8 in list order.

The approximate scores only choose candidates; the search re-scores them from float32. PQ's
scores are coarser than SQ8's, yet re-scoring as many candidates as for SQ8 (shard_vectors.RESCORE)
kept recall@10 at 100k episodes (0.970 and 0.971 with twice as many; decision 1316).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from memlake.errors import CorruptObject
from memlake.search.index.arrays import F32, I64, U8

if TYPE_CHECKING:
    import faiss


#: dims per PQ sub-quantiser, and bits per sub-code (fast-scan's only width)
PQ_DSUB = 4
PQ_BITS = 4
#: PQ needs this many rows to train on (a smaller IVF shard, only seen in tests, gets SQ8);
#: it trains on at most PQ_TRAIN rows, a seeded sample
PQ_MIN_ROWS = 256
PQ_TRAIN = 16384


def kind_of(arrays: Mapping[str, Any]) -> str:
    return "pq4" if "ivf_pq" in arrays else "sq8"


def pq_m(dim: int) -> int:
    return dim // PQ_DSUB


def supports_pq(rows: int, dim: int) -> bool:
    return rows >= PQ_MIN_ROWS and dim % PQ_DSUB == 0 and pq_m(dim) >= 2


def make_index(
    kind: str, coarse: faiss.Index, dim: int, nlist: int, arrays: Mapping[str, Any]
) -> faiss.IndexIVF:
    """An empty IVF index over `coarse` with the stored quantiser: nothing trained here."""
    import faiss

    ip = faiss.METRIC_INNER_PRODUCT
    index: faiss.IndexIVF
    if kind == "pq4":
        index = faiss.IndexIVFPQFastScan(coarse, dim, nlist, pq_m(dim), PQ_BITS, ip)
        index.by_residual = False
        centroids = np.ascontiguousarray(arrays["ivf_pq"], np.float32).ravel()
        if centroids.size != index.pq.M * index.pq.ksub * index.pq.dsub:
            raise ValueError("ivf_pq does not fit the shard's dimension")
        faiss.copy_array_to_vector(centroids, index.pq.centroids)
    else:
        qt = faiss.ScalarQuantizer.QT_8bit
        index = faiss.IndexIVFScalarQuantizer(coarse, dim, nlist, qt, ip, False)
        faiss.copy_array_to_vector(np.ravel(arrays["ivf_sq"]).astype(np.float32), index.sq.trained)
    index.is_trained = True
    return index


def packing(kind: str, index: faiss.IndexIVF) -> tuple[int, int]:
    """(entries per row of ivf_codes, bytes of such a row): one 32-vector block for pq4, one
    code for sq8. A list of n entries takes ceil(n / entries) rows."""
    if kind == "pq4":
        packer = index.get_CodePacker()
        return int(packer.nvec), int(packer.block_size)
    return 1, int(index.code_size)


def encode_pq(vectors: F32, offsets: I64, seed: int, order: I64 | None = None) -> dict[str, Any]:
    """The pq4 arrays of `vectors` (rows x dim) taken in `order` (default: as they are), which
    puts them in list order (list i is entries offsets[i]:offsets[i+1]), the quantiser
    trained on at most PQ_TRAIN of them. The codes are reordered, not the vectors: a merge of
    big shards would otherwise hold a second copy of every float32 row."""
    import faiss

    rows, dim = vectors.shape
    at = np.arange(rows) if order is None else np.asarray(order, np.int64)
    pq = faiss.ProductQuantizer(dim, pq_m(dim), PQ_BITS)
    pq.cp.min_points_per_centroid = 1  # a small sample is enough for 16 centroids in 4 dims
    pq.cp.seed = seed
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(rows, PQ_TRAIN, replace=False)) if rows > PQ_TRAIN else slice(None)
    # the sample by row, not by place in list order: the lists' numbering (ivf_order) leaves
    # the codes as they are
    pq.train(np.ascontiguousarray(vectors[pick], np.float32))
    codes = pq.compute_codes(np.ascontiguousarray(vectors, np.float32))[at]
    nlist = len(offsets) - 1
    probe = faiss.IndexIVFPQFastScan(faiss.IndexFlatIP(dim), dim, 1, pq.M, PQ_BITS)
    packer = probe.get_CodePacker()
    per, size = int(packer.nvec), int(packer.block_size)
    blocks = code_starts(offsets, per)
    packed = np.zeros((int(blocks[-1]), size), np.uint8)
    chunk = np.zeros((per, codes.shape[1]), np.uint8)
    sp = faiss.swig_ptr
    for no in range(nlist):
        lo, hi = int(offsets[no]), int(offsets[no + 1])
        for b, start in enumerate(range(lo, hi, per)):
            part = codes[start : min(start + per, hi)]
            chunk[:] = 0
            chunk[: len(part)] = part
            packer.pack_all(sp(chunk), sp(packed[int(blocks[no]) + b]))
    return {
        "ivf_pq": faiss.vector_to_array(pq.centroids).astype(np.float32).reshape(-1, pq.dsub),
        "ivf_codes": packed,
        "ivf_gain": gains(pq, vectors, codes, at),
    }


#: a row's gain is kept in these bounds (a degenerate code, 0 or negative overlap: 1)
GAIN_RANGE = (0.25, 4.0)
#: rows decoded at a time by `gains` (a merge's ~650k rows at once would be 1 GB of float32)
GAIN_CHUNK = 1 << 16


def gains(pq: faiss.ProductQuantizer, vectors: F32, codes: U8, at: I64) -> Any:
    """Each vector row's gain (float16, in row order): |x|^2 / <x, decoded x>. PQ shrinks a
    vector (decoded rows keep ~0.79 of it here), by a share that varies from row to row; the
    code score times the gain ranks the candidates nearer to their exact order (decision
    2508: the true top rows' rank among a 32k-doc shard's codes, 98th percentile 636 -> 309
    for mixed questions). `codes` are in list order: row at[i]'s code is codes[i]."""
    rows = len(at)
    out = np.ones(rows, np.float32)
    for lo in range(0, rows, GAIN_CHUNK):
        part = at[lo : lo + GAIN_CHUNK]
        x = np.asarray(vectors[part], np.float32)
        chunk = np.ascontiguousarray(codes[lo : lo + GAIN_CHUNK])
        decode: Any = pq.decode  # faiss's numpy wrapper (its stub has the C signature)
        decoded = np.asarray(decode(chunk), np.float32)
        overlap = np.einsum("ij,ij->i", x, decoded)  # 20x faster than (x * decoded).sum(1)
        norm = np.einsum("ij,ij->i", x, x)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(overlap > 0, norm / overlap, 1.0)
        ratio = np.where(np.isfinite(ratio), ratio, 1.0)
        out[part] = np.clip(ratio, *GAIN_RANGE)
    return out.astype(np.float16)


def encode_sq8(vectors: F32, order: I64 | None = None) -> dict[str, Any]:
    """The sq8 arrays of `vectors` taken in `order` (list order; default: as they are),
    format 3, kept for tests and comparisons."""
    import faiss

    dim = vectors.shape[1]
    x = np.ascontiguousarray(vectors if order is None else vectors[order])
    sq = faiss.ScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit)
    sq.train(x)
    codes = sq.compute_codes(x)
    return {
        "ivf_sq": faiss.vector_to_array(sq.trained).astype(np.float32).reshape(2, dim),
        "ivf_codes": codes.reshape(len(vectors), sq.code_size),
    }


class Gains:
    """A shard's row gains (`gains`, stored as ivf_gain) applied to code scores."""

    def __init__(self, gain: Any, name: str = "a shard's IVF index") -> None:
        self.gain = gain  # None: every gain is 1
        self.name = name  # for errors: the shard's key when known

    @classmethod
    def of(cls, arrays: Mapping[str, Any], rows: int, name: str) -> Gains:
        gain = arrays.get("ivf_gain")
        if gain is None:
            return cls(None, name)
        gain = np.asarray(gain)
        if gain.shape != (rows,) or gain.dtype != np.float16:
            raise CorruptObject(
                f"{name}: ivf_gain is not one float16 a row", hint="rebuild the object"
            )
        # checked in float32: numpy's float16 comparisons are ~20x slower, ~5 ms for a
        # shard's 164k rows inside a cold search's open (decision 4401); the same verdicts
        wide = gain.astype(np.float32)
        bad = ~np.isfinite(wide) | (wide < GAIN_RANGE[0]) | (wide > GAIN_RANGE[1])
        return cls(np.where(bad, np.float16(1), gain) if bad.any() else gain, name)

    def times(self, rows: I64, scores: F32) -> F32:
        """The code `scores` of `rows`, each times its row's gain (as they are without)."""
        if self.gain is None:
            return scores
        if len(rows) and int(np.max(rows)) >= len(self.gain):  # lists name more rows: damaged
            raise CorruptObject(
                f"{self.name}: ivf_gain has fewer rows than the lists", hint="rebuild the object"
            )
        out: F32 = np.multiply(scores, self.gain[rows], dtype=np.float32)  # (no copy after)
        return out


def code_starts(offsets: I64, per: int) -> I64:
    """The first row of ivf_codes of each list (and the end), for lists of the entries that
    `offsets` gives, `per` entries a row (see `packing`; 1: the offsets themselves)."""
    counts = np.diff(np.asarray(offsets, np.int64))
    starts = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(-(-counts // per), out=starts[1:])
    return starts


def list_bytes(sizes: I64, per: int, row_bytes: int) -> I64:
    """Bytes FAISS holds for lists of `sizes` entries once added: their rows of codes (see
    `packing`) and an int64 id per entry."""
    entries = np.asarray(sizes, np.int64)
    return np.asarray(entries * 8 + -(-entries // per) * row_bytes, np.int64)


def check_list(rows: Any, codes: U8, per: int, row_bytes: int, vectors: int) -> str | None:
    """Why a list's (rows, codes) cannot go into FAISS (None: they can): FAISS copies
    ceil(len(rows) / per) x row_bytes bytes of codes, so a shorter array would be read past
    its end, and every row must name one of the shard's `vectors` rows."""
    want = (-(-len(rows) // per), row_bytes)
    if codes.ndim != 2 or tuple(codes.shape) != want:
        return f"its codes are {tuple(codes.shape)}, not {want}"
    if len(rows) and (int(np.min(rows)) < 0 or int(np.max(rows)) >= vectors):
        return "it names no vector row"
    return None
