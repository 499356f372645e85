"""The S3 store and the lake on moto: conditional writes, lost races, retries."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from botocore.stub import Stubber
from moto import mock_aws

from memlake.errors import StorageError
from memlake.lake import Transaction
from memlake.store.base import ObjectNotFound, PreconditionFailed
from memlake.store.s3 import S3Store
from tests.wiring import bare_lake

from .conftest import s3_client


@pytest.fixture
def bucket():  # type: ignore[no-untyped-def]
    with mock_aws():
        client = s3_client()
        client.create_bucket(Bucket="lake-bucket")
        yield client


def test_conditional_put_returns_412_as_precondition_failed(bucket) -> None:  # type: ignore[no-untyped-def]
    store = S3Store("lake-bucket", prefix="lake", client=bucket)
    store.put("tenants/t/x", b"1", if_absent=True)
    with pytest.raises(PreconditionFailed):
        store.put("tenants/t/x", b"2", if_absent=True)
    assert store.get("tenants/t/x") == b"1"
    assert bucket.get_object(Bucket="lake-bucket", Key="lake/tenants/t/x")["Body"].read() == b"1"
    with pytest.raises(ObjectNotFound):
        store.get("tenants/t/missing")
    assert [o.key for o in store.list("tenants/")] == ["tenants/t/x"]


def test_409_conditional_request_conflict_counts_as_a_lost_race() -> None:
    import boto3

    client = boto3.client("s3", region_name="us-east-1")
    store = S3Store("lake-bucket", client=client)
    with Stubber(client) as stub:
        stub.add_client_error(
            "put_object",
            service_error_code="ConditionalRequestConflict",
            http_status_code=409,
        )
        with pytest.raises(PreconditionFailed):
            store.put("k", b"x", if_absent=True)


def test_lake_on_s3_retries_a_lost_manifest_race(bucket) -> None:  # type: ignore[no-untyped-def]
    store = S3Store("lake-bucket", client=bucket)
    writer_a, writer_b = bare_lake(store), bare_lake(store)

    def put(row_id: str):  # type: ignore[no-untyped-def]
        def change(txn: Transaction) -> None:
            txn.put("episodes", {"id": row_id, "content": row_id, "created_at": datetime.now(UTC)})

        return change

    writer_a.commit("t", put("a"))
    writer_b.snapshot("t")
    writer_a.commit("t", put("b"))  # b's cached version 1 is now stale
    writer_b.commit("t", put("c"))  # first conditional PUT of v2 gets 412, then retries on v3
    fresh = bare_lake(S3Store("lake-bucket", client=bucket)).snapshot("t")
    assert fresh.version == 3
    assert sorted(fresh.table("episodes").ids()) == ["a", "b", "c"]


def test_every_put_sends_its_sha256_and_s3_keeps_it(bucket) -> None:  # type: ignore[no-untyped-def]
    import base64
    import hashlib

    store = S3Store("lake-bucket", prefix="lake", client=bucket)
    data = b"a segment's bytes" * 100
    store.put("tenants/t/seg", data, if_absent=True)
    head = bucket.head_object(
        Bucket="lake-bucket", Key="lake/tenants/t/seg", ChecksumMode="ENABLED"
    )
    assert head["ChecksumSHA256"] == base64.b64encode(hashlib.sha256(data).digest()).decode()
    assert store.get("tenants/t/seg") == data  # a whole get asks for the check too


def test_s3_refuses_a_body_that_does_not_match_what_the_store_sent() -> None:
    import boto3

    client = boto3.client("s3", region_name="us-east-1")
    store = S3Store("lake-bucket", client=client)
    with Stubber(client) as stub:  # what S3 answers to a body cut or altered on the way
        stub.add_client_error("put_object", service_error_code="BadDigest", http_status_code=400)
        with pytest.raises(StorageError, match="BadDigest"):
            store.put("k", b"x", if_absent=True)
