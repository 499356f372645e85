"""A ranged or whole shard's IVF index as the shard cache sees it (decision 1306, 4401):
FAISS's lists fetched by ranges for a ranged shard, and every byte FAISS holds counted."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memlake.search.index import ivf, ivf_codes
from memlake.search.index.ranges import RangedNpz, Slice
from memlake.search.index.shard_source import LIST_GAP


class ShardIvf(ivf.Ivf):
    """An Ivf that reports the bytes its FAISS inverted lists hold (`grew(delta)`, for the
    cache's bound) and, given a ranged reader, fetches every list one `ensure` adds in one
    round of GETs (not kept in the RangeCache's memory: FAISS holds them)."""

    def __init__(
        self,
        arrays: Mapping[str, Any],
        dim: int,
        grew: Callable[[int], None],
        npz: RangedNpz | None = None,
    ) -> None:
        self._npz, self._grew, self._held = npz, grew, 0
        #: each row's place in list order, for the lists read by ranges (-1: not read)
        self.row_places: npt.NDArray[np.int64] | None = None
        self._batch: dict[int, tuple[Any, Any]] = {}
        self._count_lock = threading.Lock()
        lists = None if npz is None else self._fetched
        super().__init__(arrays, dim, lists=lists, name=npz.key if npz else "a shard's IVF index")
        sizes = np.diff(self.offsets)
        self._list_bytes = ivf_codes.list_bytes(sizes, self._per, self._row_bytes)

    @property
    def nbytes(self) -> int:
        return self._held

    def _built_later(self, nbytes: int) -> None:
        self._grew(nbytes)  # the int8 centroids: counted by the shard, not in the lists' bytes

    def ensure(self, list_nos: Any) -> None:
        wanted = self.missing(list_nos)
        if not len(wanted):
            return
        if self._npz is not None:
            self._prefetch(wanted)
        try:
            super().ensure(wanted)
        finally:
            with self._count_lock:
                for no in wanted.tolist():
                    self._batch.pop(no, None)
                held = int(self._list_bytes[self._have].sum())
                delta, self._held = held - self._held, held
        if delta:
            self._grew(delta)

    def _slices(self, nos: Any) -> list[Slice]:
        out = []
        for no in np.asarray(nos).tolist():
            lo, hi = int(self.offsets[no]), int(self.offsets[no + 1])
            a, b = int(self._code_starts[no]), int(self._code_starts[no + 1])
            out += [Slice("ivf_rows", lo, hi), Slice("ivf_codes", a, b)]
        return out

    def _prefetch(self, nos: Any) -> None:
        assert self._npz is not None
        got = self._npz.many(self._slices(nos), memory=False, gap=LIST_GAP)
        rows = got[0::2]
        self._place_many(np.asarray(nos, np.int64), rows)
        with self._count_lock:
            for i, no in enumerate(nos.tolist()):
                self._batch[no] = (got[2 * i], got[2 * i + 1])

    def _fetched(self, no: int) -> tuple[Any, Any]:
        with self._count_lock:
            got = self._batch.pop(no, None)
        if got is None:  # another thread's ensure took it: read it again
            assert self._npz is not None
            rows, codes = self._npz.many(self._slices(np.array([no])), memory=False)
            got = rows, codes
            self._place_many(np.array([no], np.int64), [rows])
        return got  # checked by Ivf.ensure, as a whole shard's lists are

    def _place_many(self, nos: npt.NDArray[np.int64], rows: Sequence[Any]) -> None:
        """Remember where the rows of lists `nos` lie in list order (ListRowReader reads them
        there), all lists of a read at once (a list at a time cost ~40-80 us of Python with
        the GIL, ~600 lists a cold search at 100k); rows outside the shard are left to
        Ivf.ensure's check, which refuses them."""
        if not len(nos):
            return
        sizes = np.fromiter((len(r) for r in rows), np.int64, len(rows))
        every = np.concatenate([np.asarray(r, np.int64) for r in rows])
        # each entry's place: its list's first place plus its index in the list
        firsts = np.asarray(self.offsets, np.int64)[nos]
        ends = np.cumsum(sizes)
        places = np.arange(len(every), dtype=np.int64) + np.repeat(firsts - (ends - sizes), sizes)
        ok = (every >= 0) & (every < int(self.offsets[-1]))
        with self._count_lock:
            if self.row_places is None:
                self.row_places = np.full(int(self.offsets[-1]), -1, np.int64)
            self.row_places[every[ok]] = places[ok]
