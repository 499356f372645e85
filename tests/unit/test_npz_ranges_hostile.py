"""RangedNpz on objects that are not what a shard writer makes: each raises CorruptObject with a
reason (never a crash, a pickle load or a read outside the object)."""

from __future__ import annotations

import io
import os
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from memlake.errors import CorruptObject
from memlake.search.index.ranges import RangedNpz
from memlake.store.local import LocalStore

KEY = "tenants/t/shards/s.npz"


def savez(**arrays: object) -> bytes:
    sink = io.BytesIO()
    np.savez(sink, **arrays)  # type: ignore[arg-type]
    return sink.getvalue()


GOOD = savez(seq=np.arange(500, dtype=np.int64), vectors=np.ones((40, 8), np.float32))


def read_all(store: LocalStore, data: bytes, size: int | None = None) -> None:
    store.put(KEY, data)
    reader = RangedNpz(store, KEY, len(data) if size is None else size)
    for name in reader.names:
        reader.array(name)
        if reader.info(name).shape:
            reader.rows(name, 0, 2)


def patched(data: bytes, old: bytes, new: bytes) -> bytes:
    assert len(old) == len(new) and data.count(old) == 1
    return data.replace(old, new)


def set_u32(data: bytes, at: int, value: int) -> bytes:
    return data[:at] + struct.pack("<I", value) + data[at + 4 :]


def zip_with(name: str, payload: bytes, **kw: object) -> bytes:
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w", **kw) as zf:  # type: ignore[arg-type]
        zf.writestr(name, payload)
    return sink.getvalue()


def npy(arr: np.ndarray) -> bytes:
    sink = io.BytesIO()
    np.lib.format.write_array(sink, arr)
    return sink.getvalue()


CD = GOOD.rfind(b"PK\x01\x02")  # the last member's central directory entry
CASES: dict[str, tuple[Callable[[], bytes], str]] = {
    "empty object": (lambda: b"", "only 0 bytes"),
    "garbage": (lambda: os.urandom(5000), "no end of central directory"),
    "zeros": (lambda: bytes(100_000), "no end of central directory"),
    "cut at the end": (lambda: GOOD[:-10], "no end of central directory"),
    "cut in half": (lambda: GOOD[: len(GOOD) // 2], "no end of central directory"),
    "compressed member": (
        lambda: (lambda s: (np.savez_compressed(s, a=np.zeros(100)), s.getvalue())[1])(
            io.BytesIO()
        ),
        "compressed",
    ),
    "object dtype (a pickle)": (
        lambda: savez(a=np.array([{"x": 1}, None], dtype=object)),
        "pickled objects are refused",
    ),
    "fortran order": (lambda: savez(a=np.asfortranarray(np.ones((3, 4)))), "Fortran order"),
    "not an .npy member": (lambda: zip_with("evil.txt", b"hello"), "no plain .npy"),
    "not an .npy inside": (lambda: zip_with("a.npy", b"\x93NUMPZ" + bytes(200)), "is no .npy"),
    "shape larger than the data": (
        lambda: patched(GOOD, b"'shape': (500,)", b"'shape': (900,)"),
        "!= its",
    ),
    "code in the header": (
        lambda: patched(GOOD, b"'descr': '<i8'", b"'descr':f'{1}'"),
        "unreadable .npy header",
    ),
    "extra header keys": (
        lambda: zip_with("a.npy", npy(np.arange(3)).replace(b"'shape'", b"'shaps'")),
        "unexpected .npy header keys",
    ),
    "member offset past the directory": (lambda: set_u32(GOOD, CD + 42, 0x7FFFFF00), "runs past"),
    "member offset at the wrong place": (lambda: set_u32(GOOD, CD + 42, 7), "no local header"),
    "two members at one offset": (lambda: set_u32(GOOD, CD + 42, 0), "two members at one"),
    "directory offset wrong": (lambda: set_u32(GOOD, len(GOOD) - 6, 3), "does not add up"),
    "stored size inconsistent": (
        lambda: set_u32(set_u32(GOOD, CD + 20, 9), CD + 24, 9),
        "runs past|!= its",
    ),
    "encrypted flag": (lambda: GOOD[: CD + 8] + b"\x01\x00" + GOOD[CD + 10 :], "encrypted"),
    "a name that is not UTF-8": (
        lambda: GOOD[: CD + 8] + b"\x00\x08" + GOOD[CD + 10 : CD + 46] + b"\xff" + GOOD[CD + 47 :],
        "not UTF-8",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_object_raises_corrupt_object(tmp_path: Path, case: str) -> None:
    make, reason = CASES[case]
    with pytest.raises(CorruptObject, match=reason) as err:
        read_all(LocalStore(tmp_path), make())
    assert err.value.code == "corrupt_object" and not err.value.retryable


def test_a_wrong_size_from_the_caller_is_caught(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    with pytest.raises(CorruptObject, match="shorter than"):
        read_all(store, GOOD, size=len(GOOD) + 100)
    with pytest.raises(CorruptObject, match="shorter than"):
        read_all(store, GOOD, size=len(GOOD) + 10_000)  # the tail starts past the end
    with pytest.raises(CorruptObject):
        read_all(store, GOOD, size=len(GOOD) - 1)


def zip64_npz() -> bytes:
    limit = zipfile.ZIP64_LIMIT
    zipfile.ZIP64_LIMIT = 64  # zip64 extra fields and end records for every member
    try:
        return savez(seq=np.arange(50, dtype=np.int64), vectors=np.ones((4, 8), np.float32))
    finally:
        zipfile.ZIP64_LIMIT = limit


@pytest.mark.parametrize("good", [GOOD, zip64_npz()], ids=["zip", "zip64"])
def test_random_damage_never_crashes(tmp_path: Path, good: bytes) -> None:
    """Bytes flipped in the directory and the headers: CorruptObject, or arrays (a zip has no
    checksum a ranged reader could verify, so a flipped data byte reads as data)."""
    store = LocalStore(tmp_path)
    rng = np.random.default_rng(13)
    second = good.find(b"PK\x03\x04", 10)
    hot = [*range(len(good) - 400, len(good)), *range(0, 200), *range(second, second + 200)]
    for _ in range(400):
        damaged = bytearray(good)
        for at in rng.choice(hot, size=int(rng.integers(1, 4))):
            damaged[at] = int(rng.integers(0, 256))
        try:
            read_all(store, bytes(damaged))
        except CorruptObject:
            pass
