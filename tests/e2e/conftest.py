"""Servers under test: `memlake serve` on a local lake, and the same app on moto-backed S3."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from memlake.config import Settings
from memlake.server import build_app
from memlake.services import Services
from memlake.store.s3 import S3Store

from .mcp_helpers import serve_in_thread, serve_subprocess

TOKENS = {"alpha": "tok-alpha-123", "beta": "tok-beta-456"}
API_KEYS = ",".join(f"{token}:{tenant}" for tenant, token in TOKENS.items())


@pytest.fixture(scope="module")
def local_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("lake")
    with serve_subprocess(data, {"MEMLAKE_API_KEYS": API_KEYS}) as url:
        yield url


@pytest.fixture(scope="module")
def s3_url() -> Iterator[str]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="memlake-test")
        settings = Settings(store="s3", bucket="memlake-test", api_keys=tuple(API_KEYS.split(",")))
        services = Services.build(settings, S3Store("memlake-test", client=client))
        with serve_in_thread(build_app(services, host="127.0.0.1")) as url:
            yield url


@pytest.fixture(params=["local", "s3"])
def mcp_url(request: pytest.FixtureRequest) -> str:
    """Every end-to-end test runs against both lakes."""
    return request.getfixturevalue(f"{request.param}_url")
