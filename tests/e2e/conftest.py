"""Servers under test: `memlake serve` on a local lake, and the same app on moto-backed S3."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import boto3
import pytest
from moto import mock_aws

from memlake.config import Settings
from memlake.mcp.server import build_app
from memlake.services import Services
from memlake.store.s3 import S3Store

from .mcp_helpers import serve_in_thread, serve_subprocess
from .serverproc import running_server  # noqa: F401  (fixture: an unauthenticated server)

TOKENS = {"alpha": "tok-alpha-123", "beta": "tok-beta-456"}
API_KEYS = ",".join(f"{token}:{tenant}" for tenant, token in TOKENS.items())


@dataclass
class ServerUnderTest:
    url: str
    objects: Callable[[], dict[str, int]]  # every stored object key -> size


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerUnderTest]:
    data = tmp_path_factory.mktemp("lake")

    def objects() -> dict[str, int]:
        return {str(p.relative_to(data)): p.stat().st_size for p in data.rglob("*") if p.is_file()}

    with serve_subprocess(data, {"MEMLAKE_API_KEYS": API_KEYS}) as url:
        yield ServerUnderTest(url, objects)


HINT = "/manifest/_latest.json"


@pytest.fixture(scope="module")
def s3_server() -> Iterator[ServerUnderTest]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="memlake-test")
        settings = Settings(store="s3", bucket="memlake-test", api_keys=tuple(API_KEYS.split(",")))
        services = Services.build(settings, S3Store("memlake-test", client=client))

        def objects() -> dict[str, int]:
            # without the hint: on S3 a write answers before its hint's put lands
            # (memlake.lake.head_copy), so the hint may change after the call that wrote it
            pages = client.get_paginator("list_objects_v2").paginate(Bucket="memlake-test")
            found = (o for page in pages for o in page.get("Contents", []))
            return {o["Key"]: o["Size"] for o in found if not o["Key"].endswith(HINT)}

        with serve_in_thread(build_app(services, host="127.0.0.1")) as url:
            yield ServerUnderTest(url, objects)


@pytest.fixture(params=["local", "s3"])
def server(request: pytest.FixtureRequest) -> ServerUnderTest:
    """Every end-to-end test runs against both lakes."""
    return request.getfixturevalue(f"{request.param}_server")  # type: ignore[no-any-return]


@pytest.fixture
def mcp_url(server: ServerUnderTest) -> str:
    return server.url
