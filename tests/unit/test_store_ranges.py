"""ObjectStore.get_range and size: the same answers on the local store and on moto S3.

[start, end) with end exclusive; a range past the end is clipped as S3 clips it; a range
starting at or past the end is RangeNotSatisfiable (S3's 416); a missing key is ObjectNotFound
as for get(); bad bounds are a caller's bug (ValueError) and never reach the store.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from memlake.errors import InvalidArgument
from memlake.store.base import ObjectNotFound, ObjectStore, RangeNotSatisfiable
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store
from tests.support.counting import CountingStore
from tests.support.stores import local_or_s3

DATA = bytes(range(256)) * 4  # 1024 distinct-enough bytes


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    with local_or_s3(request.param, tmp_path, prefix="lake") as store:
        yield store


def test_a_range_is_start_inclusive_end_exclusive(store: ObjectStore) -> None:
    store.put("shards/a.npz", DATA)
    assert store.get_range("shards/a.npz", 0, 1) == DATA[:1]
    assert store.get_range("shards/a.npz", 10, 20) == DATA[10:20]
    assert store.get_range("shards/a.npz", 1023, 1024) == DATA[1023:]
    assert store.get_range("shards/a.npz", 0, 1024) == DATA
    assert store.size("shards/a.npz") == 1024


def test_a_range_past_the_end_is_clipped(store: ObjectStore) -> None:
    store.put("shards/a.npz", DATA)
    assert store.get_range("shards/a.npz", 1000, 5000) == DATA[1000:]
    assert store.get_range("shards/a.npz", 0, 1 << 40) == DATA


def test_a_range_starting_at_or_past_the_end_is_not_satisfiable(store: ObjectStore) -> None:
    store.put("shards/a.npz", DATA)
    store.put("shards/empty", b"")
    for start in (1024, 1025, 1 << 33):
        with pytest.raises(RangeNotSatisfiable, match="shards/a.npz") as err:
            store.get_range("shards/a.npz", start, start + 10)
        assert not err.value.retryable
    with pytest.raises(RangeNotSatisfiable):  # an empty object has no byte to return
        store.get_range("shards/empty", 0, 1)
    assert store.size("shards/empty") == 0


def test_a_missing_key_is_object_not_found_like_get(store: ObjectStore) -> None:
    store.put("shards/a.npz", DATA)
    for key in ("shards/missing.npz", "shards/a.npz/below", "shards"):
        with pytest.raises(ObjectNotFound):
            store.get(key)
        with pytest.raises(ObjectNotFound):
            store.get_range(key, 0, 10)
        with pytest.raises(ObjectNotFound):
            store.size(key)


@pytest.mark.parametrize(("start", "end"), [(-1, 10), (10, 10), (10, 5), (0, 0)])
def test_invalid_bounds_are_a_value_error(store: ObjectStore, start: int, end: int) -> None:
    store.put("shards/a.npz", DATA)
    counting = CountingStore(store)
    with pytest.raises(ValueError, match="invalid byte range"):
        counting.get_range("shards/a.npz", start, end)
    assert counting.bytes_read == 0


@pytest.mark.parametrize("key", ["../x", "a/../../x", "", "a//b", "/etc/passwd", "a/.tmp-1"])
def test_local_ranges_keep_the_key_checks(tmp_path: Path, key: str) -> None:
    (tmp_path / "x").write_bytes(b"secret")
    store = LocalStore(tmp_path / "lake")
    with pytest.raises(InvalidArgument):
        store.get_range(key, 0, 3)
    with pytest.raises(InvalidArgument):
        store.size(key)


def test_counting_store_counts_ranged_requests_and_bytes(store: ObjectStore) -> None:
    store.put("shards/a.npz", DATA)
    counting = CountingStore(store)
    counting.get("shards/a.npz")
    counting.get_range("shards/a.npz", 100, 150)
    counting.get_range("shards/a.npz", 1000, 2000)  # clipped: 24 bytes come back
    with pytest.raises(ObjectNotFound):
        counting.get_range("shards/missing", 0, 10)
    assert counting.size("shards/a.npz") == 1024
    assert counting.bytes_read == 1024 + 50 + 24
    assert counting.counts == {"get": 1, "get_range": 3, "head": 1}
    assert counting.reset()["get_range"] == 3
    assert counting.bytes_read == 0 and not counting.counts


def test_s3_asks_for_an_inclusive_range_and_maps_416() -> None:
    client = boto3.client("s3", region_name="us-east-1")
    store = S3Store("b", prefix="lake", client=client)
    with Stubber(client) as stub:
        stub.add_response(
            "get_object",
            {"ContentRange": "bytes 10-19/1024", "Body": _body(DATA[10:20])},
            {"Bucket": "b", "Key": "lake/k", "Range": "bytes=10-19"},
        )
        stub.add_client_error("get_object", "InvalidRange", http_status_code=416)
        stub.add_client_error("get_object", "NoSuchKey", http_status_code=404)
        # an S3-compatible store that ignores Range answers 200 with the whole object
        stub.add_response("get_object", {"Body": _body(DATA)})
        stub.add_response("get_object", {"Body": _body(DATA)})
        assert store.get_range("k", 10, 20) == DATA[10:20]  # the stub checked the Range
        with pytest.raises(RangeNotSatisfiable):
            store.get_range("k", 5000, 5010)
        with pytest.raises(ObjectNotFound):
            store.get_range("k", 0, 10)
        assert store.get_range("k", 1000, 1100) == DATA[1000:]
        with pytest.raises(RangeNotSatisfiable):
            store.get_range("k", 1024, 1100)


def _body(data: bytes) -> StreamingBody:
    return StreamingBody(io.BytesIO(data), len(data))
