"""Where each array of an .npz lies, written into the manifest so a cold reader skips the
object's directory and headers (decision 4401).

A ranged reader of an .npz learns its members from the zip directory at the object's end (one
GET) and each member's dtype and shape from the .npy header in front of it (one more round):
two sequential round trips per shard before the first byte of data, ~50 ms on S3. The writer
has the bytes in hand, so it parses them once (the same parser a reader uses, memlake.search.
index.npz_format) and the manifest's ShardInfo carries the result as a small table:

    {"ids": [start, "|u1", [n]], "vectors": [start, "<f2", [rows, 384]], ...}

start is the absolute offset of the array's first data byte. A reader given the table checks
it against the object's size as the parser checks a directory (a manifest is trusted no more
than the object: a table that does not fit is CorruptObject), then reads data ranges only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from memlake.search.index.npz_format import (
    ArrayInfo,
    bad,
    data_offset,
    find_directory,
    parse_directory,
    parse_npy_header,
)

#: the most arrays a table may list (a shard has ~28)
MAX_ARRAYS = 256
#: a zip local header's most bytes (30 fixed, a name and an extra field of up to 64 KiB each)
LOCAL_HEADER_MAX = 30 + 2 * 0xFFFF
#: bytes read for a .npy header (it says how many more it needs, if any)
NPY_HEADER_READ = 4096


def layout_of(key: str, data: bytes) -> dict[str, ArrayInfo]:
    """Every array's place in the .npz `data` (the whole object, in memory)."""
    cd_off, cd_size, count = find_directory(key, data, len(data))
    members = parse_directory(key, data[cd_off : cd_off + cd_size], count, cd_off)
    out: dict[str, ArrayInfo] = {}
    for name, member in members.items():
        # only the headers, never the rest of the object: slicing `data[member.offset:]` for
        # each of ~28 members copied ~4 GB of a 290 MB shard (3 of an erasure's 7.5 s)
        local = data[member.offset : member.offset + LOCAL_HEADER_MAX]
        start = data_offset(key, member, local, cd_off)
        head = data[start : start + min(member.size, NPY_HEADER_READ)]
        info = parse_npy_header(key, member, head, start)
        if isinstance(info, int):  # a header longer than the first read: read what it needs
            info = parse_npy_header(key, member, data[start : start + info], start)
        assert not isinstance(info, int)  # the whole header is in hand
        out[name] = info
    return out


def to_json(layout: dict[str, ArrayInfo]) -> dict[str, list[Any]]:
    return {n: [i.start, i.dtype.str, list(i.shape)] for n, i in layout.items()}


def from_json(key: str, doc: Any, size: int) -> dict[str, ArrayInfo]:
    """The table as ArrayInfos, each array inside the object's `size` bytes and apart from the
    others; CorruptObject naming the object otherwise."""
    if not isinstance(doc, dict) or not doc or len(doc) > MAX_ARRAYS:
        raise bad(key, "its layout in the manifest is no table of arrays")
    out: dict[str, ArrayInfo] = {}
    try:
        for name, (start, descr, shape) in doc.items():
            dtype = np.dtype(str(descr))
            dims = tuple(shape)
            if not isinstance(name, str) or dtype.hasobject or dtype.itemsize == 0:
                raise ValueError(f"array {name!r} holds {dtype}")
            if type(start) is not int or not all(type(d) is int and d >= 0 for d in dims):
                raise ValueError(f"array {name!r} at {start!r} with shape {shape!r}")
            out[name] = ArrayInfo(name, start, dtype, dims)
    except (TypeError, ValueError) as e:
        raise bad(key, f"its layout in the manifest does not hold ({e})") from e
    spans = sorted((i.start, i.start + i.dtype.itemsize * math.prod(i.shape)) for i in out.values())
    for (a, end), (b, _) in zip(spans, spans[1:] + [(size, size)], strict=True):
        if a < 0 or end > b or end > size:
            raise bad(key, f"its layout in the manifest places an array at [{a}, {end})")
    return out
