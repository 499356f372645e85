"""Where a shard's big arrays come from when it is opened by byte ranges (docs/decisions/1306).

A big sealed shard (memlake.search.index.cache.lazy) is opened through a RangedNpz: the object's
directory (one tail GET), then ONE round of coalesced GETs for the per-doc, per-passage and
per-term arrays a search needs at once (EAGER) and the .npy headers of the big members. The
rest is read when a search needs it and kept in the byte-bounded RangeCache (memory, /tmp):

- BM25 postings (`indices`/`tf`, `p_indices`/`p_tf`) of the query's terms only: one round for
  both kinds (`RangedSource.postings`); the tf normalisation is computed per slice, exactly as
  the whole-object path computes it for all postings;
- the IVF lists a search probes (`ivf_rows`/`ivf_codes`), all lists of one `Ivf.ensure` in one
  round (`shard_ivf.ShardIvf`), handed to FAISS's inverted lists (not kept twice in memory);
- the float32 rows of the re-score candidates (`RowReader`), runs of consecutive rows as one
  range each, in one round.

`shard_ivf.ShardIvf` counts the bytes FAISS holds for the lists it added (`grew`), for whole and
ranged shards alike, so the ShardCache's byte bound includes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memlake.search.index import ivf, term_postings
from memlake.search.index.arrays import F32, I32
from memlake.search.index.npz_format import bad
from memlake.search.index.ranges import RangedNpz, Slice
from memlake.search.index.term_postings import TERM_POSTINGS

K1 = 1.5
B = 0.75
#: read when the shard opens (small: per doc, per passage, per term, per vector row, centroids)
EAGER = (
    "header", "ids", "seq", "t_start", "t_end", "ctx", "doc_len", "vocab", "indptr",
    "p_doc", "p_start", "p_end", "p_len", "p_indptr", "chunk_doc", "chunk_passage",
    "ivf_centroids", "ivf_sq", "ivf_pq", "ivf_offsets", "ivf_gain",
)  # fmt: skip
#: an IVF shard's re-score rows again, in list order (ivf_rows' order): read by ranges at the
#: positions of a search's candidates, never loaded with a whole shard (decision 4401)
LIST_VECTORS = "list_vectors"
#: read by ranges when a search needs them (their headers come with the eager round)
ON_DEMAND = (
    "indices", "tf", "p_indices", "p_tf", "vectors", "ivf_rows", "ivf_codes", LIST_VECTORS,
    TERM_POSTINGS,
)  # fmt: skip
#: copies a search reads by ranges and a whole load leaves out (decision 4401)
RANGED_COPIES = (LIST_VECTORS, TERM_POSTINGS)
#: coalescing gaps of reads in list order, the probed lists' codes and the candidates' rows:
#: a gap read costs its bytes (128 KiB: ~1.4 ms at S3's 90 MB/s a request), a request more
#: costs a first byte (~25 ms) if it waits, and a request's charge and ~1 ms of the client's
#: CPU either way; measured at 10k x 20 in decision 4401 (16 KiB: 545 requests, 16.6 MB)
LIST_GAP = 128 << 10
ROWS_GAP = 256 << 10

Postings = list[tuple[I32, F32] | None]


def norm_of(lengths: F32) -> F32:
    """BM25's length normalisation of each doc (or passage): k1 * (1 - b + b * len / avg)."""
    avg = float(lengths.mean()) if len(lengths) else 1.0
    out: F32 = K1 * ((1 - B) + B * lengths / max(avg, 1e-9))
    return out


def checked_postings(indices: Any, n: int, what: str) -> I32:
    """`indices` if they are int32 doc numbers in 0..n-1. The BM25 kernel adds into scores by
    them unchecked (memlake.search.index.shard_bm25), so a damaged object fails here instead of
    writing outside the scores array. ValueError names what is wrong."""
    arr = np.asarray(indices)
    if arr.dtype != np.int32 or arr.ndim != 1:
        raise ValueError(f"{what}: postings must be int32 doc numbers, not {arr.dtype}")
    if len(arr) and (int(arr.min()) < 0 or int(arr.max()) >= n):
        raise ValueError(f"{what}: a posting names no doc (0..{n - 1})")
    return arr


def tfc(tf: Any, norm: F32, indices: I32) -> F32:
    """The saturated term frequency of postings: tf / (tf + norm[doc]) (elementwise, so a
    slice computes exactly what the whole array does), in 0..1 whatever a damaged object's
    lengths say: BM25's pruning bounds what a term adds by its idf (kernels.numba_bm25)."""
    tf = np.asarray(tf, np.float32)
    sat = (tf / (tf + norm[indices])).astype(np.float32)
    return np.clip(np.nan_to_num(sat, nan=0.0), 0.0, 1.0, out=sat)


def fetch_eager(npz: RangedNpz) -> dict[str, Any]:
    """The arrays a ranged shard holds from the start, in one round of GETs (with the headers
    of the big members). A shard without the IVF arrays needs all its vectors for its flat
    scan: they are read whole here too."""
    names = set(npz.names)
    has_ivf = all(n in names for n in ivf.REQUIRED)
    eager = [n for n in EAGER if n in names and (has_ivf or not n.startswith("ivf_"))]
    if not has_ivf and "vectors" in names:
        eager.append("vectors")
    later = [n for n in ON_DEMAND if n in names and n not in eager]
    try:
        got = npz.many([Slice(n) for n in eager] + [Slice(n, 0, 0) for n in later], memory=False)
    except ValueError as e:  # a scalar member where rows are expected
        raise bad(npz.key, str(e)) from e
    return dict(zip(eager, got, strict=False))


def runs(name: str, rows: npt.NDArray[np.int64]) -> list[Slice]:
    """Slices of member `name` covering sorted, distinct `rows`: one per run of consecutive
    rows."""
    cut = np.flatnonzero(np.diff(rows) != 1) + 1
    starts, ends = rows[np.r_[0, cut]], rows[np.r_[cut - 1, len(rows) - 1]] + 1
    return [Slice(name, int(a), int(b)) for a, b in zip(starts, ends, strict=True)]


class RowReader:
    """The rows of a (rows x dim) member, read when indexed: `reader[rows]` fetches the runs of
    consecutive rows in one coalesced round (cached in the RangeCache), in the order asked."""

    def __init__(self, npz: RangedNpz, name: str) -> None:
        self.npz, self.name = npz, name
        info = npz.info(name)  # known from the eager round: no request
        self.shape, self.dtype = info.shape, info.dtype

    def __len__(self) -> int:
        return int(self.shape[0])

    def __getitem__(self, rows: Any) -> npt.NDArray[Any]:
        rows = np.asarray(rows, np.int64).reshape(-1)
        uniq = np.unique(rows)
        if not len(uniq):
            return np.empty((0, *self.shape[1:]), self.dtype)
        if uniq[0] < 0 or uniq[-1] >= len(self):
            raise IndexError(f"rows outside 0..{len(self)} of {self.name}")
        block = np.concatenate(self.npz.many(runs(self.name, uniq)))
        return block[np.searchsorted(uniq, rows)]


class ListRowReader(RowReader):
    """A ranged IVF shard's rows read from LIST_VECTORS where their position in list order is
    known (`positions()`: each row's place, -1 where its list was not read; the candidates of
    a search are rows of the lists it probed), else from `vectors` by row."""

    def __init__(self, npz: RangedNpz, positions: Callable[[], npt.NDArray[np.int64] | None]):
        super().__init__(npz, "vectors")
        self.positions = positions

    def __getitem__(self, rows: Any) -> npt.NDArray[Any]:
        rows = np.asarray(rows, np.int64).reshape(-1)
        pos = self.positions()
        if pos is None or not len(rows):
            return super().__getitem__(rows)
        if rows.min() < 0 or rows.max() >= len(self):
            raise IndexError(f"rows outside 0..{len(self)} of {self.name}")
        at = pos[rows]
        known = at >= 0
        out = np.empty((len(rows), *self.shape[1:]), self.dtype)
        if known.any():
            places = np.unique(at[known])
            block = np.concatenate(self.npz.many(runs(LIST_VECTORS, places), gap=ROWS_GAP))
            out[known] = block[np.searchsorted(places, at[known])]
        if not known.all():
            out[~known] = super().__getitem__(rows[~known])
        return out


class RangedSource:
    """BM25 postings of a ranged shard, by term: each term's span of TERM_POSTINGS (one range
    for both kinds) where the shard has it, else its slices of the four CSR arrays."""

    def __init__(self, npz: RangedNpz, ptrs: Mapping[str, Any], norms: Mapping[str, F32]) -> None:
        self.npz = npz
        #: kind ("" episodes, "p_" passages) -> (indptr, norm); formats 1 has no passages
        self.kinds = {k: (ptrs[k], norms[k]) for k in ptrs}
        self.together = TERM_POSTINGS in npz.members
        if self.together:
            words = sum(2 * npz.info(k + "indices").shape[0] for k in self.kinds)
            copy = npz.info(TERM_POSTINGS)
            if (copy.dtype, copy.shape) != (np.dtype(np.int32), (words,)):
                raise bad(npz.key, f"{TERM_POSTINGS} {copy.shape} does not hold its postings")

    def _span(self, t: int) -> Slice:
        p_ptr = self.kinds["p_"][0] if "p_" in self.kinds else None
        return Slice(TERM_POSTINGS, *term_postings.span(self.kinds[""][0], p_ptr, t))

    def _slices(self, ids: Sequence[int]) -> list[Slice]:
        slices = []
        for t in sorted({t for t in ids if t >= 0}):
            if self.together:
                slices.append(self._span(t))
                continue
            for k, (ptr, _) in self.kinds.items():
                lo, hi = int(ptr[t]), int(ptr[t + 1])
                slices += [Slice(k + "indices", lo, hi), Slice(k + "tf", lo, hi)]
        return slices

    def _raw(self, got: Mapping[Slice, Any], t: int, kind: str) -> tuple[Any, Any]:
        """(docs, tf) of term t of one kind, as read."""
        ptr = self.kinds[kind][0]
        lo, hi = int(ptr[t]), int(ptr[t + 1])
        if not self.together:
            return got[Slice(kind + "indices", lo, hi)], got[Slice(kind + "tf", lo, hi)]
        n, pn = (int(p[t + 1]) - int(p[t]) for p in self._ptrs())
        return term_postings.split(got[self._span(t)], n, pn)[kind]

    def _ptrs(self) -> tuple[Any, Any]:
        ptr = self.kinds[""][0]
        return ptr, self.kinds["p_"][0] if "p_" in self.kinds else np.zeros(len(ptr), np.int64)

    def postings(self, ids: Sequence[int], kind: str) -> Postings:
        """(docs, saturated tf) of each term id (None for -1) of one kind; the other kind's
        postings of the same terms come in the same round (the next call finds them cached)."""
        slices = self._slices(ids)
        got = dict(zip(slices, self.npz.many(slices), strict=True))
        norm = self.kinds[kind][1]
        out: Postings = []
        for t in ids:
            if t < 0:
                out.append(None)
                continue
            try:
                raw_docs, raw_tf = self._raw(got, t, kind)
                docs = checked_postings(raw_docs, len(norm), f"term {t} ({kind}doc)")
            except ValueError as e:
                raise bad(self.npz.key, str(e)) from e
            out.append((docs, tfc(raw_tf, norm, docs)))
        return out
