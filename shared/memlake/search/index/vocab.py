"""A shard's terms: the sorted, '\\n'-joined `vocab` member, looked up where it lies.

A search wants the ids of a few query terms; opening a shard built a dict of every term for
that, on every cold open (decision 4401). The terms are sorted as Python sorts str, which is the
order of their UTF-8 bytes, so a term is found by binary search over the blob's lines (the
line starts from one numpy pass). A term is an id only where its line is that term, so a
damaged, unsorted vocabulary can only miss terms, never name the wrong one. The list of terms,
for merges and repairs, is made when first asked for.
"""

from __future__ import annotations

from typing import Any

import numpy as np

NEWLINE = 0x0A


class Vocab:
    """The terms of one shard, in their stored (sorted) order."""

    def __init__(self, blob: Any) -> None:
        raw = np.asarray(blob, np.uint8)
        self._data = raw.tobytes()
        breaks = np.flatnonzero(raw == NEWLINE)
        if self._data:
            self._starts = np.concatenate(([0], breaks + 1)).astype(np.int64)
            self._ends = np.concatenate((breaks, [len(self._data)])).astype(np.int64)
        else:
            self._starts = self._ends = np.zeros(0, np.int64)
        self._terms: list[str] | None = None

    def __len__(self) -> int:
        return len(self._starts)

    @property
    def nbytes(self) -> int:
        return len(self._data) + int(self._starts.nbytes) + int(self._ends.nbytes)

    def index(self, term: str) -> int:
        """The term's id (its line), or -1 where the shard has not seen it."""
        key = term.encode("utf-8", "surrogatepass")
        data, starts, ends = self._data, self._starts, self._ends
        lo, hi = 0, len(starts)
        while lo < hi:
            mid = (lo + hi) // 2
            if data[int(starts[mid]) : int(ends[mid])] < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(starts) and data[int(starts[lo]) : int(ends[lo])] == key:
            return lo
        return -1

    @property
    def terms(self) -> list[str]:
        """Every term, in order (decoded once, when first asked for)."""
        if self._terms is None:
            text = self._data.decode()
            self._terms = text.split("\n") if text else []
        return self._terms
