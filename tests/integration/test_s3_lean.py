"""Ranged reads the lean way (memlake.store.s3_lean, decision 4401 lever 17): the client's own
URL, signature, hooks and HTTP session without its per-call machinery; a signature S3's
check accepts; boto3 still the one place failures are answered."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core import set_initial_no_auth_action_count

from memlake.errors import StorageError
from memlake.store import s3_lean
from memlake.store.base import ObjectNotFound, RangeNotSatisfiable
from memlake.store.s3 import S3Store

from .conftest import s3_client

BLOB = os.urandom(300_000)


class _Calls:
    """Counts the client's own GetObject calls (the boto3 path) and passes them on."""

    def __init__(self, client: Any) -> None:
        self.n, self._get = 0, client.get_object
        client.get_object = self

    def __call__(self, **kwargs: Any) -> Any:
        self.n += 1
        return self._get(**kwargs)


class _NoHooks:
    def emit(self, *_: Any, **__: Any) -> list[Any]:
        return []


class _Refuses:
    """A store's hook that refuses every request (403), as S3 refuses a bad signature."""

    def emit(self, *_: Any, **__: Any) -> list[Any]:
        refused = SimpleNamespace(status_code=403, content=b"<Error/>", headers={})
        return [(None, refused)]


def _ranges_read_right(store: S3Store) -> None:
    for start, end in [(0, 1), (17, 4_113), (299_000, 300_000), (123_456, 223_456)]:
        assert store.get_range("tenants/t/blob", start, end) == BLOB[start:end]
    assert store.get_range("tenants/t/blob", 299_990, 400_000) == BLOB[299_990:]  # clipped


@pytest.fixture
def mocked() -> Iterator[Any]:
    with mock_aws():
        client = s3_client()
        client.create_bucket(Bucket="lake-bucket")
        yield client


def test_ranged_reads_go_the_lean_way_and_failures_through_boto3(mocked: Any) -> None:
    store = S3Store("lake-bucket", prefix="lake", client=mocked)
    store.put("tenants/t/blob", BLOB)
    calls = _Calls(mocked)
    _ranges_read_right(store)
    assert calls.n == 0 and store.lean is not None and store.lean.on
    # a missing key and a range past the end: boto3's answers, the lean path still on
    with pytest.raises(ObjectNotFound):
        store.get_range("tenants/t/missing", 0, 10)
    with pytest.raises(RangeNotSatisfiable):
        store.get_range("tenants/t/blob", 300_000, 300_010)
    assert calls.n == 2 and store.lean.on


def test_the_lean_path_is_given_up_after_misses_and_boto3_reads(
    mocked: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = S3Store("lake-bucket", client=mocked)
    store.put("tenants/t/blob", BLOB)
    assert store.lean is not None

    calls = _Calls(mocked)
    # a transport error is boto3's to retry, and does not turn the lean path off
    monkeypatch.setattr(store.lean, "_http", None)
    monkeypatch.setattr(store.lean, "_events", _NoHooks())
    for _ in range(s3_lean.MISSES + 1):
        assert store.get_range("tenants/t/blob", 5, 50) == BLOB[5:50]
    assert calls.n == s3_lean.MISSES + 1 and store.lean.on
    # requests the store refuses (403: a signature it does not take, say) turn it off
    monkeypatch.undo()
    monkeypatch.setattr(store.lean, "_events", _Refuses())
    for _ in range(s3_lean.MISSES + 3):
        assert store.get_range("tenants/t/blob", 5, 50) == BLOB[5:50]
    assert not store.lean.on


def test_a_client_without_the_parts_reads_through_boto3(mocked: Any) -> None:
    class Bare:  # not a botocore client: no hooks, signer or session to borrow
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> Any:
            if name in ("meta", "_request_signer", "_endpoint"):
                raise AttributeError(name)
            return getattr(self.inner, name)

    store = S3Store("lake-bucket", client=Bare(mocked))
    assert store.lean is None
    store.put("tenants/t/blob", BLOB)
    _ranges_read_right(store)


@mock_aws
@set_initial_no_auth_action_count(4)
def test_the_lean_signature_passes_s3s_signature_check() -> None:
    """moto checks each request's SigV4 signature against the user's secret once the first
    four actions (the user, its policy and key, the bucket) are done."""
    iam = boto3.client("iam", region_name="us-east-1")
    iam.create_user(UserName="reader")
    allow = {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}
    policy = {"Version": "2012-10-17", "Statement": [allow]}
    iam.put_user_policy(UserName="reader", PolicyName="s3", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="reader")["AccessKey"]
    client = boto3.client(
        "s3",
        region_name="us-east-1",
        aws_access_key_id=key["AccessKeyId"],
        aws_secret_access_key=key["SecretAccessKey"],
    )
    client.create_bucket(Bucket="lake-bucket")
    store = S3Store("lake-bucket", prefix="lake", client=client)
    store.put("tenants/t/blob", BLOB)
    calls = _Calls(client)
    _ranges_read_right(store)
    assert calls.n == 0 and store.lean is not None and store.lean.on
    # a wrong secret: refused on both paths, answered as boto3 answers it
    wrong = boto3.client(
        "s3",
        region_name="us-east-1",
        aws_access_key_id=key["AccessKeyId"],
        aws_secret_access_key="not-the-secret",
    )
    with pytest.raises(StorageError):
        S3Store("lake-bucket", prefix="lake", client=wrong).get_range("tenants/t/blob", 0, 10)


def test_ranged_reads_over_http_take_the_lean_way(moto_endpoint: str) -> None:
    client = s3_client(moto_endpoint)
    client.create_bucket(Bucket="lake-bucket")
    store = S3Store("lake-bucket", prefix="lake", client=client)
    store.put("tenants/t/blob", BLOB)
    calls = _Calls(client)
    _ranges_read_right(store)
    with pytest.raises(ObjectNotFound):
        store.get_range("tenants/t/missing", 0, 10)
    assert calls.n == 1 and store.lean is not None and store.lean.on
