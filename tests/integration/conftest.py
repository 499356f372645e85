from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto.server import ThreadedMotoServer

from tests.e2e.mcp_helpers import free_port

from .lambda_helpers import Stack, deployed


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """A real HTTP S3 endpoint (moto server): requests race over sockets like against AWS."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def s3_client(endpoint: str | None = None):  # type: ignore[no-untyped-def]
    return boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    """template.yaml's functions on moto S3, with the MCP function's environment to start with
    (Stack.use switches to another function's): what every test_lambda_*.py runs against."""
    with deployed(monkeypatch) as s:
        yield s
