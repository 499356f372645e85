"""Every term's postings together, for a ranged shard's BM25 (decision 4401).

A shard's postings are four CSR arrays by term: `indices` and `tf` (episodes), `p_indices` and
`p_tf` (passages). A ranged search reads a term's slice of each, four requests a term and a
shard (36 of a cold search's ~140 at 10k x 20). TERM_POSTINGS holds the same values again in
term order, each term's four runs side by side:

    term t at 2 * (indptr[t] + p_indptr[t]):  indices | tf | p_indices | p_tf

as 4-byte words (tf as float32, its bits as int32: exact for the uint16 or float32 a
shard stores), so one range reads a term of both kinds. Written
beside the CSR arrays for IVF shards (the ones a search opens by ranges); a whole load skips
it, as it skips the list-ordered vectors. Shards written before it read the four arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from memlake.search.index.arrays import F32, I32

TERM_POSTINGS = "term_postings"


def build(arrays: dict[str, Any]) -> I32:
    """TERM_POSTINGS of a shard's CSR arrays (both kinds; a kind absent counts as empty)."""
    ptr = np.asarray(arrays["indptr"], np.int64)
    p_ptr = np.asarray(arrays.get("p_indptr", np.zeros(len(ptr), np.int64)), np.int64)
    n, pn = np.diff(ptr), np.diff(p_ptr)
    out = np.empty(2 * (int(ptr[-1]) + int(p_ptr[-1])), np.int32)
    start = 2 * (ptr[:-1] + p_ptr[:-1])
    for kind, base, counts, kind_ptr in (("", start, n, ptr), ("p_", start + 2 * n, pn, p_ptr)):
        if kind + "indices" not in arrays:
            continue
        term = np.repeat(np.arange(len(counts)), counts)
        at = base[term] + np.arange(int(kind_ptr[-1])) - kind_ptr[:-1][term]
        out[at] = _words(arrays[kind + "indices"])
        out[at + counts[term]] = _words(np.asarray(arrays[kind + "tf"], np.float32))
    return out


def span(ptr: Any, p_ptr: Any | None, t: int) -> tuple[int, int]:
    """Term t's [start, end) in TERM_POSTINGS."""
    lo = int(ptr[t]) + (int(p_ptr[t]) if p_ptr is not None else 0)
    hi = int(ptr[t + 1]) + (int(p_ptr[t + 1]) if p_ptr is not None else 0)
    return 2 * lo, 2 * hi


def split(block: Any, n: int, pn: int) -> dict[str, tuple[I32, F32]]:
    """A term's span as {kind: (docs, tf)}: its `n` episodes' postings, then its `pn`
    passages'. ValueError: the span is not of 4-byte words of that size."""
    words = np.asarray(block)
    if words.dtype != np.int32 or words.ndim != 1 or len(words) != 2 * (n + pn):
        raise ValueError(f"a term's postings span of {words.shape} words holds not {n} + {pn}")
    rest = words[2 * n :]
    return {
        "": (words[:n], words[n : 2 * n].view(np.float32)),
        "p_": (rest[:pn], rest[pn:].view(np.float32)),
    }


def _words(values: Any) -> npt.NDArray[np.int32]:
    arr = np.ascontiguousarray(values)
    if arr.dtype.itemsize != 4:
        raise ValueError(f"postings of {arr.dtype} are not 4-byte words")
    return arr.view(np.int32)
