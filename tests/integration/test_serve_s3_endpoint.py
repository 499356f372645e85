"""`memlake serve` on an S3-compatible endpoint (MinIO, LocalStack, ...): boto3 takes the
endpoint from AWS_ENDPOINT_URL_S3, so the server needs nothing but the environment. Here the
endpoint is moto's HTTP server and the server is a subprocess, as a user runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.mcp_helpers import call, connect, run
from tests.e2e.serverproc import CMD_ENV, start_server
from tests.integration.conftest import s3_client

BUCKET = "memlake-local-s3"
TOKEN = "tok-s3-endpoint"


@pytest.mark.slow
def test_serve_against_an_s3_compatible_endpoint(
    moto_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a bucket on an S3-compatible endpoint
    client = s3_client(moto_endpoint)
    client.create_bucket(Bucket=BUCKET)
    env = {
        "MEMLAKE_BUCKET": BUCKET,  # the store is s3 when a bucket is set
        "MEMLAKE_PREFIX": "dev/",
        "MEMLAKE_API_KEYS": f"{TOKEN}:alpha",
        "AWS_ENDPOINT_URL_S3": moto_endpoint,
        "AWS_ACCESS_KEY_ID": "minioadmin",
        "AWS_SECRET_ACCESS_KEY": "minioadmin",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    # WHEN memlake serve runs against it (no --data: that would choose a local lake) and a
    # client stores and searches an episode
    monkeypatch.setenv(CMD_ENV, "{python} -m memlake serve --host {host} --port {port}")
    with start_server(tmp_path / "unused", env) as server:

        async def scenario() -> tuple[dict[str, object], dict[str, object]]:
            async with connect(server.mcp_url, TOKEN) as mcp:
                added = await call(mcp, "add_episode", {"content": "the lake lives in MinIO"})
                found = await call(mcp, "search_episodes", {"query": "where does the lake live"})
                return added, found

        added, found = run(scenario())
        assert "(lake: s3://" + BUCKET in server.log()

    # THEN the episode came back from search, and its objects are in that bucket, not on disk
    assert not added["is_error"] and not found["is_error"], (added, found)
    ids = [ep["id"] for ep in found["episodes"]]  # type: ignore[union-attr]
    assert added["id"] in ids
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    assert any(k.startswith("dev/tenants/alpha/tables/episodes/") for k in keys), keys
    assert not (tmp_path / "unused").exists()
