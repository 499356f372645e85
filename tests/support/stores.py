"""The two stores a store-level test runs on: a local directory and moto's in-process S3."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import boto3
from moto import mock_aws

from memlake.store.base import ObjectStore
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store


@contextmanager
def local_or_s3(kind: str, tmp_path: Path, prefix: str = "") -> Iterator[ObjectStore]:
    """A LocalStore under tmp_path ("local"), or an S3Store on a fresh moto bucket ("s3")."""
    if kind == "local":
        yield LocalStore(tmp_path / "lake")
        return
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="lake-bucket")
        yield S3Store("lake-bucket", prefix=prefix, client=client)
