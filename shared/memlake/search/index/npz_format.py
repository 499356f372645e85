"""The byte layout of an uncompressed .npz (np.savez), parsed from partial bytes.

An .npz is a zip of .npy members. What a ranged reader needs, and where it lives:

    end of central directory (22 B, last in the object; zip64 adds a 56 B record and a 20 B
    locator before it)  -> where the central directory starts and how many members it lists
    central directory (46 B + name + extra + comment per member) -> each member's local header
    offset and stored size (zip64 extra when a field overflows 32 bits)
    local header (30 B + name + extra, right before the member's bytes) -> where they start
    .npy header (magic, version, a dict literal: descr, fortran_order, shape) -> dtype, shape

Everything is checked against the object's size: a corrupt or hostile object raises
CorruptObject (compressed or encrypted members, pickled/object dtypes, Fortran order, offsets
or sizes that do not add up), never a crash or a read outside the object.
"""

from __future__ import annotations

import ast
import math
import struct
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from memlake.errors import CorruptObject
from memlake.lake.checksums import damaged

EOCD = struct.Struct("<4s4H2IH")  # signature, disks, entries x2, cd size, cd offset, comment
ZIP64_LOCATOR = struct.Struct("<4sIQI")
ZIP64_EOCD = struct.Struct("<4sQ2H2I4Q")
CENTRAL = struct.Struct("<4s6H3I5HII")
LOCAL = struct.Struct("<4s5H3I2H")
NPY_MAGIC = b"\x93NUMPY"
MAX_NPY_HEADER = 10_000  # numpy's own default limit (np.load max_header_size)
_U16, _U32 = 0xFFFF, 0xFFFFFFFF


@dataclass(frozen=True)
class Member:
    """A stored .npy member: its name (without .npy), local header offset, stored bytes."""

    name: str
    raw_name: bytes
    offset: int
    size: int


@dataclass(frozen=True)
class ArrayInfo:
    """Where a member's array data is in the object, and what it holds."""

    name: str
    start: int  # absolute offset of the first data byte
    dtype: np.dtype[np.generic]
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return self.dtype.itemsize * math.prod(self.shape)

    @cached_property
    def row_bytes(self) -> int:  # asked for each slice a search reads (~1,000 when cold)
        return self.dtype.itemsize * math.prod(self.shape[1:])


def bad(key: str, why: str) -> CorruptObject:
    return damaged(key, f"not a readable .npz ({why})")


def find_directory(key: str, tail: bytes, size: int) -> tuple[int, int, int]:
    """(central directory offset, its size, member count) from the object's last bytes."""
    base = size - len(tail)
    pos = tail.rfind(b"PK\x05\x06")
    while pos >= 0 and not _ends_at(tail, pos):
        pos = tail.rfind(b"PK\x05\x06", 0, pos)  # a signature inside the comment
    if pos < 0:
        raise bad(key, f"no end of central directory in its last {len(tail)} bytes")
    _, disk, cd_disk, n_here, count, cd_size, cd_off, _ = EOCD.unpack_from(tail, pos)
    if disk or cd_disk or n_here != count:
        raise bad(key, "a multi-disk zip")
    loc = pos - ZIP64_LOCATOR.size
    if loc >= 0 and tail[loc : loc + 4] == b"PK\x06\x07":
        _, _, z64_off, _ = ZIP64_LOCATOR.unpack_from(tail, loc)
        rec = z64_off - base
        if not 0 <= rec <= loc - ZIP64_EOCD.size or tail[rec : rec + 4] != b"PK\x06\x06":
            raise bad(key, "a zip64 locator pointing outside the object's end")
        fields = ZIP64_EOCD.unpack_from(tail, rec)
        count, cd_size, cd_off = fields[-3], fields[-2], fields[-1]
        end = z64_off
    elif _U16 in (n_here, count) or _U32 in (cd_size, cd_off):
        raise bad(key, "zip64 fields without a zip64 locator")
    else:
        end = base + pos
    if cd_off + cd_size != end or count * CENTRAL.size > cd_size:
        raise bad(key, "the central directory's size or offset does not add up")
    return cd_off, cd_size, count


def _ends_at(tail: bytes, pos: int) -> bool:
    """Whether an end record at `pos` (with its comment) ends exactly where `tail` ends."""
    if pos + EOCD.size > len(tail):
        return False
    comment = EOCD.unpack_from(tail, pos)[-1]
    return pos + EOCD.size + comment == len(tail)


def parse_directory(key: str, cd: bytes, count: int, cd_off: int) -> dict[str, Member]:
    """The members listed in the central directory bytes `cd` (which start at `cd_off`)."""
    members: dict[str, Member] = {}
    pos = 0
    for _ in range(count):
        if pos + CENTRAL.size > len(cd) or cd[pos : pos + 4] != b"PK\x01\x02":
            raise bad(key, "a truncated central directory")
        f = CENTRAL.unpack_from(cd, pos)
        flags, method, csize, usize, n, m, k, offset = (
            f[3],
            f[4],
            f[8],
            f[9],
            f[10],
            f[11],
            f[12],
            f[16],
        )
        raw = cd[pos + CENTRAL.size : pos + CENTRAL.size + n]
        extra = cd[pos + CENTRAL.size + n : pos + CENTRAL.size + n + m]
        pos += CENTRAL.size + n + m + k
        if pos > len(cd):
            raise bad(key, "a truncated central directory")
        try:
            name = raw.decode("utf-8" if flags & 0x800 else "cp437")
        except UnicodeDecodeError as e:
            raise bad(key, f"a member name {raw!r} that is not UTF-8") from e
        usize, csize, offset = _zip64_fields(key, extra, usize, csize, offset)
        if method != 0 or flags & 0x1:
            raise bad(key, f"member {name!r} is compressed or encrypted (np.savez stores them)")
        if not name.endswith(".npy") or name[:-4] in members or csize != usize:
            raise bad(key, f"member {name!r} is no plain .npy or is listed twice")
        if offset + LOCAL.size + n + usize > cd_off:
            raise bad(key, f"member {name!r} runs past the central directory")
        members[name[:-4]] = Member(name[:-4], raw, offset, usize)
    return members


def _zip64_fields(key: str, extra: bytes, usize: int, csize: int, off: int) -> tuple[int, ...]:
    """The 64-bit values for the fields stored as 0xFFFFFFFF (zip64 extra field, id 1)."""
    wanted = [v == _U32 for v in (usize, csize, off)]
    if not any(wanted):
        return usize, csize, off
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, pos)
        if pos + 4 + length > len(extra):
            raise bad(key, "an extra field longer than its entry")
        if tag == 1:
            values = list(struct.unpack_from(f"<{length // 8}Q", extra, pos + 4))
            out = []
            for v, is_big in zip((usize, csize, off), wanted, strict=True):
                if is_big and not values:
                    raise bad(key, "a zip64 extra field too short")
                out.append(values.pop(0) if is_big else v)
            return tuple(out)
        pos += 4 + length
    raise bad(key, "zip64 sizes without a zip64 extra field")


def data_offset(key: str, member: Member, local: bytes, limit: int) -> int:
    """Offset of the member's .npy bytes, from the first bytes of its local header; the
    member must end by `limit` (where the central directory starts)."""
    if len(local) < LOCAL.size or local[:4] != b"PK\x03\x04":
        raise bad(key, f"member {member.name!r} has no local header at {member.offset}")
    f = LOCAL.unpack_from(local)
    n, m = f[-2], f[-1]
    if f[3] != 0 or local[LOCAL.size : LOCAL.size + n] != member.raw_name:
        raise bad(key, f"member {member.name!r}'s local header disagrees with the directory")
    start = member.offset + LOCAL.size + n + m
    if start + member.size > limit:
        raise bad(key, f"member {member.name!r} runs past the central directory")
    return start


def parse_npy_header(key: str, member: Member, head: bytes, start: int) -> ArrayInfo | int:
    """The array's layout from the bytes at the member's .npy start (`start` in the object).

    Returns how many bytes the header needs when `head` is too short to hold it."""
    if len(head) < 12:
        return 12
    if head[:6] != NPY_MAGIC or head[6] not in (1, 2, 3) or head[7] != 0:
        raise bad(key, f"member {member.name!r} is no .npy (magic {head[:8]!r})")
    major = head[6]
    pre = 10 if major == 1 else 12
    hlen = struct.unpack_from("<H" if major == 1 else "<I", head, 8)[0]
    if hlen > MAX_NPY_HEADER:
        raise bad(key, f"member {member.name!r}'s .npy header is {hlen} bytes")
    if len(head) < pre + hlen:
        return pre + hlen
    text = head[pre : pre + hlen].decode("utf-8" if major == 3 else "latin1", "replace")
    try:
        d = ast.literal_eval(text)
        if not isinstance(d, dict) or set(d) != {"descr", "fortran_order", "shape"}:
            raise bad(key, f"member {member.name!r} has unexpected .npy header keys")
        dtype = np.lib.format.descr_to_dtype(d["descr"])
        shape = tuple(d["shape"])
        fortran = d["fortran_order"]
    except (ValueError, SyntaxError, TypeError, KeyError, MemoryError, RecursionError) as e:
        raise bad(key, f"member {member.name!r} has an unreadable .npy header") from e
    if dtype.hasobject or dtype.itemsize == 0:
        raise bad(key, f"member {member.name!r} holds {dtype} (pickled objects are refused)")
    if fortran is not False:
        raise bad(key, f"member {member.name!r} is in Fortran order")
    if not all(type(s) is int and s >= 0 for s in shape):
        raise bad(key, f"member {member.name!r} has shape {shape!r}")
    info = ArrayInfo(member.name, start + pre + hlen, dtype, shape)
    if pre + hlen + info.nbytes != member.size:
        raise bad(key, f"member {member.name!r}: {shape} x {dtype} != its {member.size} bytes")
    return info
