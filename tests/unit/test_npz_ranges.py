"""RangedNpz: arrays and row slices of an .npz object read with byte-range GETs equal np.load's,
and read only about the bytes they need (counted with CountingStore), on the local store and
moto S3. Hostile objects: tests/unit/test_npz_ranges_hostile.py."""

from __future__ import annotations

import io
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import boto3
import numpy as np
import pytest
from moto import mock_aws

from memlake.search.index import ranges
from memlake.search.index.ranges import RangedNpz, Slice, coalesce
from memlake.search.index.shard import Doc
from memlake.search.index.shard_build import build
from memlake.store.base import ObjectNotFound
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store
from tests.support.counting import CountingStore

KEY = "tenants/t/shards/s1.npz"
ROWS, DIM = 10_000, 384


def shard_like() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {
        "header": np.frombuffer(b'{"format": 3, "model": "m", "dim": 384}', np.uint8),
        "ids": np.frombuffer("\n".join(f"e{i}" for i in range(500)).encode(), np.uint8),
        "seq": rng.integers(0, 1 << 40, 500, dtype=np.int64),
        "vectors": rng.standard_normal((ROWS, DIM)).astype(np.float32),
        "codes": rng.integers(0, 256, (ROWS, 48), dtype=np.uint8),
        "indptr": np.arange(0, 2001, 2, dtype=np.int64),
        "tf": rng.integers(0, 9, 3000).astype(np.uint16),
        "empty": np.empty(0, np.int32),
        "empty_rows": np.empty((0, DIM), np.float32),
        "no_cols": np.empty((7, 0), np.float32),
        "big_endian": np.arange(12, dtype=">f8").reshape(3, 4),
        "scalar": np.array(2.5),
    }


def npz(arrays: dict[str, np.ndarray]) -> bytes:
    sink = io.BytesIO()
    np.savez(sink, **arrays)  # type: ignore[arg-type]
    return sink.getvalue()


@pytest.fixture(scope="module")
def arrays() -> dict[str, np.ndarray]:
    return shard_like()


@pytest.fixture(scope="module")
def data(arrays: dict[str, np.ndarray]) -> bytes:
    return npz(arrays)


@pytest.fixture
def store(tmp_path: Path, data: bytes) -> CountingStore:
    inner = LocalStore(tmp_path)
    inner.put(KEY, data)
    return CountingStore(inner)


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_every_array_and_random_row_slices_equal_np_load(store: CountingStore, data: bytes) -> None:
    reader = RangedNpz(store, KEY, len(data))
    with np.load(io.BytesIO(data), allow_pickle=False) as want:
        assert sorted(reader.names) == sorted(want.files)
        for name in want.files:
            assert_same(reader.array(name), want[name])
        rng = np.random.default_rng(1)
        for name in ("vectors", "codes", "seq", "ids", "tf", "empty_rows", "no_cols", "big_endian"):
            n = len(want[name])
            for lo, hi in [(0, 1), (max(n - 1, 0), n), (0, n + 5), (n, n + 3), (3, 2)] + [
                tuple(sorted(rng.integers(0, n + 1, 2))) for _ in range(5)
            ]:
                assert_same(reader.rows(name, int(lo), int(hi)), want[name][lo:hi])
    with pytest.raises(ValueError, match=">= 0"):
        reader.rows("vectors", -1, 3)
    with pytest.raises(ValueError, match="scalar"):
        reader.rows("scalar", 0, 1)
    with pytest.raises(KeyError, match="nope"):
        reader.array("nope")


def test_a_row_slice_reads_only_about_its_bytes(store: CountingStore, data: bytes) -> None:
    reader = RangedNpz(store, KEY, len(data))  # the directory: one GET of the tail
    assert store.counts == {"get_range": 1} and store.bytes_read <= ranges.TAIL_BYTES
    assert store.reset()
    reader.info("vectors")  # the member's headers: one small GET
    assert store.counts == {"get_range": 1} and store.bytes_read <= ranges.HEAD_BYTES
    store.reset()
    rows = reader.rows("vectors", 10, 20)
    assert store.counts == {"get_range": 1}
    assert store.bytes_read == 10 * DIM * 4 < 20_000  # the rows' bytes, nothing else
    assert not rows.flags.writeable  # a view of the fetched bytes
    store.reset()
    assert reader.array("scalar") == 2.5 and reader.array("header")[0] == ord("{")
    assert store.counts == {"get_range": 2}  # one GET each, headers included


def test_whole_arrays_need_no_header_round_and_small_members_come_with_their_header(
    store: CountingStore, data: bytes
) -> None:
    reader = RangedNpz(store, KEY, len(data))
    store.reset()
    reader.array("codes")
    assert store.counts == {"get_range": 1}
    assert store.bytes_read < ROWS * 48 + 300  # the member: its bytes and ~200 B of headers
    store.reset()
    reader.infos(["seq", "header", "empty"])  # small members: data held with the header
    requests = store.counts["get_range"]
    assert_same(reader.array("header"), shard_like()["header"])
    assert_same(reader.rows("empty", 0, 9), np.empty(0, np.int32))
    assert store.counts["get_range"] == requests


def test_every_members_layout_in_one_coalesced_round(store: CountingStore, data: bytes) -> None:
    reader = RangedNpz(store, KEY, len(data))
    store.reset()
    infos = reader.infos(reader.names)  # one parallel round; headers close together share a GET
    assert {i.name: (i.dtype, i.shape) for i in infos} == {
        n: (a.dtype, a.shape) for n, a in shard_like().items()
    }
    assert store.counts["get_range"] <= 4  # the big members (vectors, codes) split the rest
    assert store.bytes_read < 30_000  # headers and the small members between them, of 16 MB
    store.reset()
    small = [n for n, a in shard_like().items() if a.nbytes <= 512]
    assert len(small) >= 6 and reader.many([Slice(n) for n in small])
    assert store.counts["get_range"] == 0  # small members came whole with their headers


def test_many_coalesces_near_ranges_and_fetches_far_ones_in_parallel(
    store: CountingStore, data: bytes, arrays: dict[str, np.ndarray]
) -> None:
    reader = RangedNpz(store, KEY, len(data), gap=4096)
    reader.infos(["vectors", "codes"])
    store.reset()
    near = [Slice("vectors", 100, 102), Slice("vectors", 104, 110), Slice("vectors", 103, 104)]
    far = [Slice("vectors", 9000, 9001), Slice("codes", 5, 6)]
    got = reader.many(near + far)
    for s, g in zip(near + far, got, strict=True):
        assert_same(g, arrays[s.name][s.lo : s.hi])
    assert store.counts == {"get_range": 3}  # 100..110 in one GET (gaps of 1 row < 4096 B)
    assert store.bytes_read == 10 * DIM * 4 + DIM * 4 + 48


def test_coalesce_merges_overlapping_and_near_ranges_only() -> None:
    assert coalesce([(50, 60), (0, 10), (12, 20), (15, 18)], gap=2) == [
        (0, 20, [1, 2, 3]),
        (50, 60, [0]),
    ]
    assert coalesce([(0, 10), (13, 20)], gap=2) == [(0, 10, [0]), (13, 20, [1])]
    assert coalesce([], gap=10) == []


def test_the_size_comes_from_one_head_when_not_given(store: CountingStore) -> None:
    reader = RangedNpz(store, KEY)
    assert store.counts == {"head": 1, "get_range": 1}
    assert reader.rows("seq", 0, 3).tolist() == shard_like()["seq"][:3].tolist()
    with pytest.raises(ObjectNotFound):
        RangedNpz(store, "tenants/t/shards/missing.npz")


def test_a_real_shard_reads_like_np_load(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    docs = [
        Doc(f"e{i}", i, i, i + 1, "ctx" if i % 2 else None, ["alpha", f"w{i}"],
            rng.standard_normal((3, 16)).astype(np.float32), passages=[(0, 4, ["alpha"])] * 3)
        for i in range(40)
    ]  # fmt: skip
    data = build(docs, model="m", dim=16)
    store = LocalStore(tmp_path)
    store.put(KEY, data)
    reader = RangedNpz(store, KEY, len(data))
    with np.load(io.BytesIO(data), allow_pickle=False) as want:
        assert set(reader.names) == set(want.files) and "vectors" in want.files
        got = reader.many([Slice(name) for name in want.files])
        for name, g in zip(want.files, got, strict=True):
            assert_same(g, want[name])


def test_zip64_records_and_npy_format_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    arrays = {"v1": np.arange(30.0).reshape(10, 3), "v2": np.arange(7, dtype=np.int16)}
    sink = io.BytesIO()
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 64)  # every size and offset "overflows"
    with zipfile.ZipFile(sink, "w") as zf:
        for i, (name, arr) in enumerate(arrays.items()):
            with zf.open(name + ".npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, arr, version=(i + 1, 0))
        arrays["v3"] = np.array(["héllo", "wörld"])
        with zf.open("v3.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array(fh, arrays["v3"], version=(3, 0))
    monkeypatch.undo()
    data = sink.getvalue()
    assert b"PK\x06\x07" in data[-100:] and b"PK\x06\x06" in data[-100:]  # zip64 end records
    store = LocalStore(tmp_path)
    store.put(KEY, data)
    reader = RangedNpz(store, KEY, len(data))
    with np.load(io.BytesIO(data), allow_pickle=False) as want:
        for name in arrays:
            assert_same(reader.array(name), want[name])
            assert_same(reader.rows(name, 1, 2), want[name][1:2])


def test_a_directory_longer_than_the_tail_takes_a_second_get(tmp_path: Path) -> None:
    arrays = {f"member_with_a_rather_long_name_{i:04d}": np.array([i]) for i in range(120)}
    data = npz(arrays)
    store = CountingStore(LocalStore(tmp_path))
    store.inner.put(KEY, data)
    reader = RangedNpz(store, KEY, len(data))
    assert store.counts == {"get_range": 2} and len(reader.names) == 120
    assert reader.array("member_with_a_rather_long_name_0077").tolist() == [77]


def test_a_long_npy_header_is_read_with_one_more_get(tmp_path: Path) -> None:
    dtype = np.dtype([(f"field_{i:03d}", "<f4") for i in range(150)])  # a ~3 KB header
    arr = np.zeros(4, dtype)
    arr["field_007"] = [1, 2, 3, 4]
    data = npz({"wide": arr, "after": np.arange(3)})
    store = LocalStore(tmp_path)
    store.put(KEY, data)
    reader = RangedNpz(store, KEY, len(data))
    assert reader.rows("wide", 1, 3)["field_007"].tolist() == [2.0, 3.0]
    assert_same(reader.array("after"), np.arange(3))


def test_readers_share_one_across_threads(store: CountingStore, data: bytes, arrays: dict) -> None:
    reader = RangedNpz(store, KEY, len(data))
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(20):
                lo = int(rng.integers(0, ROWS))
                name = ("vectors", "codes")[seed % 2]
                assert_same(reader.rows(name, lo, lo + 5), arrays[name][lo : lo + 5])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.fixture
def s3_store(data: bytes) -> Iterator[CountingStore]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="lake-bucket")
        inner = S3Store("lake-bucket", prefix="lake", client=client)
        inner.put(KEY, data)
        yield CountingStore(inner)


def test_on_s3_a_slice_reads_only_its_bytes(s3_store: CountingStore, data: bytes) -> None:
    reader = RangedNpz(s3_store, KEY, len(data))
    got = reader.many([Slice("vectors", 10, 20), Slice("codes", 500, 600), Slice("seq")])
    with np.load(io.BytesIO(data), allow_pickle=False) as want:
        assert_same(got[0], want["vectors"][10:20])
        assert_same(got[1], want["codes"][500:600])
        assert_same(got[2], want["seq"])
    # the tail; seq whole with vectors' headers next to it (coalesced), codes' headers; then
    # the two row ranges
    assert s3_store.counts == {"get_range": 5}
    wanted = 10 * DIM * 4 + 100 * 48 + 500 * 8
    heads = ranges.TAIL_BYTES + 2 * ranges.HEAD_BYTES + 200
    assert wanted < s3_store.bytes_read < wanted + heads
    assert s3_store.bytes_read < len(data) / 300


def test_a_long_range_is_read_in_parts_side_by_side(
    store: CountingStore, data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A range longer than PART_BYTES is several GETs (S3 serves each at its own ~90 MB/s),
    joined into the same bytes."""
    reader = RangedNpz(store, KEY, len(data))
    info = reader.info("vectors")
    store.reset()
    monkeypatch.setattr(ranges, "PART_BYTES", 1 << 20)
    got = reader.array("vectors")
    with np.load(io.BytesIO(data), allow_pickle=False) as want:
        assert_same(got, want["vectors"])
    assert store.counts["get_range"] == -(-info.nbytes // (1 << 20))  # (its header fits)
    assert ranges.split(0, 5) == [(0, 5)] and ranges.split(0, 3 << 20) == [
        (0, 1 << 20), (1 << 20, 2 << 20), (2 << 20, 3 << 20)
    ]  # fmt: skip


class SliceRecorder(bytes):
    """The object's bytes, recording the length of every slice taken of them."""

    taken: list[int]

    def __getitem__(self, item):  # type: ignore[no-untyped-def, override]
        got = super().__getitem__(item)
        if isinstance(item, slice):
            self.taken.append(len(got))
        return got


def test_the_layout_of_a_big_shard_reads_its_headers_not_its_arrays() -> None:
    """npz_layout.layout_of sliced `data[member.offset:]` for every member: ~4 GB copied for a
    290 MB shard (3 s of an erasure's 7.5 s at 10k episodes, decision 4801)."""
    from memlake.search.index.npz_layout import layout_of

    big = {f"a{i}": np.arange(200_000, dtype=np.float32) + i for i in range(8)}
    data = SliceRecorder(npz(big))
    data.taken = []
    found = layout_of("k.npz", data)
    assert set(found) == set(big)
    for name, info in found.items():
        start = info.start
        assert np.array_equal(
            np.frombuffer(bytes(data)[start : start + 800_000], np.float32), big[name]
        )
    assert max(data.taken) < 200_000, sorted(data.taken)[-3:]  # never an array's bytes
