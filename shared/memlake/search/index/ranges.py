"""Arrays of an .npz object read by byte ranges: one array, or some rows of one, per GET.

A shard object is an uncompressed .npz (np.savez), so every member is a plain .npy at a fixed
offset and a row slice of a C-order array is one contiguous byte range. RangedNpz reads

- the zip directory (member -> offset, size) from the object's tail: one GET of TAIL_BYTES,
  a second only when the central directory is longer than that;
- a member's local + .npy header (dtype, shape) with one small GET of HEAD_BYTES the first
  time it is needed (a member that fits in HEAD_BYTES comes whole with it); `infos(names)`
  fetches several headers in one parallel, coalesced round;
- `array(name)`: one GET, always the whole member with its headers (so a cold array needs no
  header round, and the cache key is the same warm or cold); `rows(name, lo, hi)`: one GET
  once the header is known;
- `many(slices)`: at most two rounds of parallel GETs (whole members, unknown headers and
  rows of known members first; then rows of the members whose headers just came), byte
  ranges coalesced where the gap between two is at most COALESCE_GAP.

Every range goes through a RangeCache (memlake.search.index.range_cache) keyed by the range asked
for, which also counts hits, misses, requests and bytes. docs/decisions/1305 explains the
choices and the numbers.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from memlake.pools import STORE_IO
from memlake.search.index.npz_format import (
    EOCD,
    ArrayInfo,
    Member,
    bad,
    data_offset,
    find_directory,
    parse_directory,
    parse_npy_header,
)
from memlake.search.index.range_cache import RangeCache
from memlake.store.base import ObjectStore, RangeNotSatisfiable

TAIL_BYTES = 4 << 10  # a directory of ~60 members; a format-3 shard has ~28 (~1.7 KB)
HEAD_BYTES = 1 << 10  # local header (~55 B) + .npy header (128 B) + small members whole
COALESCE_GAP = 256 << 10  # read over a gap this small rather than make another request
#: the most one ranged GET asks for (`split`): at 10k x 20 on the S3 model, 4 / 2 / 1 MiB
#: gave a cold search ~397 / 362 / 339-365 ms in 110 / 114 / 124 requests (decision 4401)
PART_BYTES = 2 << 20
#: ranged GETs go through memlake.pools.STORE_IO (128 in flight: 8 made a cold search's rounds
#: queue into ~80 sequential round trips, decision 4401); S3Store's connection pool is as wide
_POOL = STORE_IO


class Slice(NamedTuple):
    """Rows [lo, hi) of a member (clipped to its rows); lo = hi = None: the whole array."""

    name: str
    lo: int | None = None
    hi: int | None = None


def split(start: int, end: int) -> list[tuple[int, int]]:
    """[start, end) as requests of at most PART_BYTES, read side by side: S3 serves each at
    ~90 MB/s, so a 30 MB range is ~0.35 s alone and ~50 ms in 2 MiB parts (decision 4401)."""
    return [(a, min(a + PART_BYTES, end)) for a in range(start, end, PART_BYTES)]


def coalesce(ranges: Sequence[tuple[int, int]], gap: int) -> list[tuple[int, int, list[int]]]:
    """Merge byte ranges that overlap or lie at most `gap` bytes apart: (start, end, the
    indices of the ranges it covers), in offset order."""
    out: list[tuple[int, int, list[int]]] = []
    for i in sorted(range(len(ranges)), key=lambda i: ranges[i]):
        start, end = ranges[i]
        if out and start - out[-1][1] <= gap:
            s, e, idx = out[-1]
            out[-1] = (s, max(e, end), [*idx, i])
        else:
            out.append((start, end, [i]))
    return out


class RangedNpz:
    """An .npz object of `size` bytes under `key` (the size from the caller, e.g. the
    manifest's ShardInfo.bytes, or one HEAD); thread-safe."""

    def __init__(
        self,
        store: ObjectStore,
        key: str,
        size: int | None = None,
        *,
        cache: RangeCache | None = None,
        gap: int | None = None,
        layout: dict[str, ArrayInfo] | None = None,
    ) -> None:
        """`layout`: every array's place, from the manifest (memlake.search.index.npz_layout):
        no directory or header is read, and a whole array is one range of its data."""
        self.store = store
        self.key = key
        self.size = store.size(key) if size is None else size
        self.cache = cache if cache is not None else RangeCache(max_bytes=0)
        self.gap = COALESCE_GAP if gap is None else gap
        self._lock = threading.Lock()
        self._infos: dict[str, ArrayInfo] = dict(layout or {})
        self._small: dict[str, bytes] = {}  # data of members that came with their header
        self.laid_out = layout is not None
        if layout is not None:
            self.members = {
                n: Member(n, f"{n}.npy".encode(), i.start, i.nbytes) for n, i in layout.items()
            }
            self._cd_off = self.size
            self._ends = {n: i.start + i.nbytes for n, i in layout.items()}
            return
        self.members, self._cd_off = self._read_directory()
        ends = sorted([m.offset for m in self.members.values()] + [self._cd_off])
        if len(set(ends)) != len(ends):
            raise bad(key, "two members at one offset")
        self._ends = {m.name: ends[ends.index(m.offset) + 1] for m in self.members.values()}

    @property
    def names(self) -> list[str]:
        return list(self.members)

    # reading ---------------------------------------------------------------------------
    def fetch(
        self, ranges: Sequence[tuple[int, int]], memory: bool = True, gap: int | None = None
    ) -> list[bytes]:
        """The bytes of each [start, end) range of the object: cached ones from the cache, the
        rest coalesced (over gaps of at most `gap`, default the reader's) and fetched in
        parallel (kept in the cache's memory unless `memory` is False: the caller holds them
        itself; its directory keeps them either way)."""
        key = self.key
        out = self.cache.lookup_many([(key, s, e) for s, e in ranges], memory)
        missing = [i for i, data in enumerate(out) if data is None]
        groups = coalesce([ranges[i] for i in missing], self.gap if gap is None else gap)
        parts = [part for g in groups for part in split(g[0], g[1])]
        if len(parts) > 1:
            got = iter(_POOL.get().map(lambda p: self._get(p[0], p[1]), parts))
        else:
            got = iter([self._get(p[0], p[1]) for p in parts])
        blocks = [b"".join(next(got) for _ in split(g[0], g[1])) for g in groups]
        for (start, _, idx), block in zip(groups, blocks, strict=True):
            for j in idx:
                s, e = ranges[missing[j]]
                out[missing[j]] = data = block[s - start : e - start]
                self.cache.add((self.key, s, e), data, memory=memory)
        return [data for data in out if data is not None]

    def _get(self, start: int, end: int) -> bytes:
        if not 0 <= start < end <= self.size:
            raise bad(self.key, f"a range [{start}, {end}) outside its {self.size} bytes")
        try:
            data = self.store.get_range(self.key, start, end)
        except RangeNotSatisfiable as e:  # the caller's size is larger than the object
            raise bad(self.key, f"it is shorter than the {self.size} bytes it should have") from e
        self.cache.count(requests=1, bytes_fetched=len(data))
        if len(data) != end - start:
            raise bad(self.key, f"it is shorter than the {self.size} bytes it should have")
        return data

    def _read_directory(self) -> tuple[dict[str, Member], int]:
        if self.size < EOCD.size:
            raise bad(self.key, f"only {self.size} bytes")
        tail_start = max(0, self.size - TAIL_BYTES)
        (tail,) = self.fetch([(tail_start, self.size)])
        cd_off, cd_size, count = find_directory(self.key, tail, self.size)
        if cd_off < tail_start:
            (head,) = self.fetch([(cd_off, tail_start)])
            tail, tail_start = head + tail, cd_off
        cd = tail[cd_off - tail_start : cd_off - tail_start + cd_size]
        return parse_directory(self.key, cd, count, cd_off), cd_off

    # headers ---------------------------------------------------------------------------
    def _member(self, name: str) -> Member:
        try:
            return self.members[name]
        except KeyError:
            raise KeyError(f"{self.key} has no array {name!r}") from None

    def info(self, name: str) -> ArrayInfo:
        """Where the array's data is and its dtype and shape (one small GET the first time)."""
        return self.infos([name])[0]

    def infos(self, names: Sequence[str]) -> list[ArrayInfo]:
        members = [self._member(n) for n in names]
        with self._lock:
            unknown = list({m.name: m for m in members if m.name not in self._infos}.values())
        spans = [(m.offset, self._head_end(m.name)) for m in unknown]
        for m, block in zip(unknown, self.fetch(spans), strict=True):
            self._learn(m, block)
        with self._lock:
            return [self._infos[n] for n in names]

    def _learn(self, m: Member, block: bytes) -> ArrayInfo:
        """Parse a member's headers from `block` (its first bytes); keep its data when the
        block holds all of it. Fetches the rest of an unusually long header."""
        start = data_offset(self.key, m, block, self._ends[m.name])
        head = block[start - m.offset :]
        info = parse_npy_header(self.key, m, head, start)
        if isinstance(info, int):  # a header longer than the block
            (more,) = self.fetch([(start, start + info)])
            info = parse_npy_header(self.key, m, more, start)
            assert not isinstance(info, int)
        lo = info.start - m.offset
        with self._lock:
            self._infos[m.name] = info
            if info.nbytes <= HEAD_BYTES and lo + info.nbytes <= len(block):
                self._small[m.name] = block[lo : lo + info.nbytes]
        return info

    # arrays ----------------------------------------------------------------------------
    def array(self, name: str) -> np.ndarray[Any, Any]:
        """The whole array: one GET of the member, its headers included (none for a small
        member whose header was read already)."""
        return self.many([Slice(name)])[0]

    def rows(self, name: str, lo: int, hi: int) -> np.ndarray[Any, Any]:
        """Rows [lo, hi) of a C-order array, clipped to its rows: one GET once its header is
        known (one more, small, the first time)."""
        return self.many([Slice(name, lo, hi)])[0]

    def many(
        self, slices: Sequence[Slice], memory: bool = True, gap: int | None = None
    ) -> list[np.ndarray[Any, Any]]:
        """Each slice's array, in at most two rounds of coalesced, parallel GETs: first whole
        members (headers and data in one range), the headers not known yet of members sliced
        by rows, and the rows whose headers are known; then the rows of the members whose
        headers the first round brought. A small member held with its header costs nothing.
        `memory` and `gap`: as for `fetch`."""
        for s in slices:
            self._member(s.name)
        with self._lock:
            infos, small = dict(self._infos), dict(self._small)
        # a whole array comes with its headers, unless the layout is known: then its data only
        whole = list(
            dict.fromkeys(
                s.name
                for s in slices
                if _whole(s) and s.name not in small and not (self.laid_out and s.name in infos)
            )
        )
        rows = [s for s in slices if s.name not in small and s.name not in whole]
        heads = list(dict.fromkeys(s.name for s in rows if s.name not in infos))
        ready = self._ranges([s for s in rows if s.name in infos], infos)
        first = [(self.members[n].offset, self._ends[n]) for n in whole]
        first += [(self.members[n].offset, self._head_end(n)) for n in heads]
        blocks = self.fetch(first + list(ready.values()), memory, gap)
        data: dict[Slice | str, bytes] = dict(zip(ready, blocks[len(first) :], strict=True))
        for n, block in zip(whole + heads, blocks, strict=False):
            info = infos[n] = self._learn(self.members[n], block)
            if n in whole:
                begin = info.start - self.members[n].offset
                data[n] = block[begin : begin + info.nbytes]
        with self._lock:
            small = dict(self._small)
        later = self._ranges([s for s in rows if s not in data and s.name not in small], infos)
        data.update(zip(later, self.fetch(list(later.values()), memory, gap), strict=True))
        out = []
        for s in slices:
            info = infos[s.name]
            lo, hi = _rows(s, info)
            held = small.get(s.name, data.get(s.name))
            if held is not None:
                raw = held[lo * info.row_bytes : hi * info.row_bytes]
            else:
                raw = data.get(s, b"")  # nothing fetched: an empty slice
            shape = (hi - lo, *info.shape[1:]) if info.shape else ()
            out.append(np.frombuffer(raw, dtype=info.dtype).reshape(shape))
        return out

    def _head_end(self, name: str) -> int:
        m = self.members[name]
        return min(self._ends[name], m.offset + HEAD_BYTES)

    @staticmethod
    def _ranges(
        slices: Sequence[Slice], infos: dict[str, ArrayInfo]
    ) -> dict[Slice, tuple[int, int]]:
        """The bytes of each row slice that has any (an empty one needs no GET)."""
        out = {}
        for s in slices:
            info = infos[s.name]
            lo, hi = _rows(s, info)
            if hi > lo and info.row_bytes:
                out[s] = (info.start + lo * info.row_bytes, info.start + hi * info.row_bytes)
        return out


def _whole(s: Slice) -> bool:
    return s.lo is None and s.hi is None


def _rows(s: Slice, info: ArrayInfo) -> tuple[int, int]:
    """Row bounds of a slice, clipped like a Python slice (negative bounds are refused)."""
    if not info.shape:
        if not _whole(s):
            raise ValueError(f"{info.name} is a scalar array: it has no rows")
        return 0, 1
    lo, hi = s.lo or 0, info.shape[0] if s.hi is None else s.hi
    if lo < 0 or hi < 0:
        raise ValueError(f"row bounds of {info.name} must be >= 0, got [{lo}, {hi})")
    lo, hi = min(lo, info.shape[0]), min(hi, info.shape[0])
    return lo, max(lo, hi)
