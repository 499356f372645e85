"""Long content through /mcp: the write answers with vectors_pending, keyword search finds it at
once, and after maintenance (the local server's background thread; on S3 the pass the
scheduled maintenance Lambda runs) nothing is pending and its tail is found by meaning.

The servers embed at most 4 passages per write here (MEMLAKE_EMBED_SYNC_PASSAGES) so a 6 KB
episode (24 passages: sentences grouped up to 64 word pieces) is "long" without costing seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memlake.config import Settings
from memlake.maintenance import maintenance_policy, run_maintenance
from memlake.mcp.server import build_app
from memlake.services import Services
from memlake.store.s3 import S3Store

from .mcp_helpers import call, connect, run, serve_in_thread, serve_subprocess

SYNC = 4
TOKEN, TENANT = "tok-long-123", "longform"
HEAD = [
    "We reviewed the deployment pipeline and found that the cache key changed after the upgrade.",
    "The integration stage timed out twice, so the team rolled back the release.",
    "Database migrations ran in the wrong order because two branches changed one table.",
    "We agreed to pin the container base image and to rebuild it weekly with patches.",
    "Latency on the checkout service rose during the sale; autoscaling reacted too slowly.",
]
TAIL = (
    "The lighthouse keeper climbed the spiral stairs every evening to light the lamp for"
    " passing ships."
)
CONTENT = " ".join(f"{HEAD[i % 5]} Item {i}." for i in range(60)) + "\n\n" + TAIL
#: shares no keyword with TAIL (nor with the rest): only the vectors can match it
PARAPHRASE = "who tends the coastal beacon at night so sailors can navigate"


def _hit(found: dict[str, Any], episode_id: str) -> dict[str, Any] | None:
    """The score breakdown of episode_id among search_episodes' results."""
    return next((h["breakdown"] for h in found["episodes"] if h["id"] == episode_id), None)


async def _write(url: str) -> tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]:
    async with connect(url, TOKEN) as client:
        added = await call(client, "add_episode", {"content": CONTENT})
        await call(client, "add_episode", {"content": "Notes from the quarterly budget review."})
        got = await call(client, "get_episode", {"id": added["id"]})
        keyword = await call(client, "search_episodes", {"query": "lighthouse keeper"})
        return added["id"], added, got, keyword


async def _read(url: str, episode_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    async with connect(url, TOKEN) as client:
        got = await call(client, "get_episode", {"id": episode_id})
        found = await call(client, "search_episodes", {"query": PARAPHRASE, "limit": 5})
        return got, found


def _check_written(added: dict[str, Any], got: dict[str, Any], keyword: dict[str, Any]) -> None:
    assert not added["is_error"] and added["vectors_pending"] >= 16, added
    assert got["vectors_pending"] == added["vectors_pending"]
    hit = _hit(keyword, added["id"])  # BM25 covers the whole content from the first commit
    assert hit is not None and hit["bm25_rank"] == 1, keyword


def _check_done(got: dict[str, Any], found: dict[str, Any]) -> None:
    assert got.get("vectors_pending", 0) == 0, got
    hit = _hit(found, got["id"])
    assert hit is not None and hit.get("bm25_rank") is None, found  # found by meaning alone
    assert hit["vector_rank"] == 1 and hit["vector_score"] > 0.2, found


def test_long_content_on_the_local_server(tmp_path: Path) -> None:
    env = {
        "MEMLAKE_API_KEYS": f"{TOKEN}:{TENANT}",
        "MEMLAKE_EMBED_SYNC_PASSAGES": str(SYNC),
        "MEMLAKE_EMBED_BATCH_PASSAGES": "16",  # two maintenance ticks for this episode
    }
    with serve_subprocess(tmp_path, env) as url:
        episode_id, added, got, keyword = run(_write(url))
        _check_written(added, got, keyword)
        deadline = time.monotonic() + 60
        while True:  # the server's maintenance thread ticks every 2 s
            got, found = run(_read(url, episode_id))
            if got.get("vectors_pending", 0) == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        _check_done(got, found)


@pytest.fixture
def s3_services() -> Iterator[Services]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="memlake-long")
        settings = Settings(
            store="s3",
            bucket="memlake-long",
            api_keys=(f"{TOKEN}:{TENANT}",),
            embed_sync_passages=SYNC,
        )
        yield Services.build(settings, S3Store("memlake-long", client=client))


def test_long_content_on_s3(s3_services: Services) -> None:
    with serve_in_thread(build_app(s3_services, host="127.0.0.1")) as url:
        episode_id, added, got, keyword = run(_write(url))
        _check_written(added, got, keyword)
        got, found = run(_read(url, episode_id))
        assert got["vectors_pending"] == added["vectors_pending"]  # no background work here
        hit = _hit(found, episode_id)
        assert hit is None or hit["vector_score"] < 0.1  # its embedded passages miss the query
        # WHEN the scheduled maintenance runs (what functions/maintenance/app.py calls)
        policy = maintenance_policy(s3_services.settings, "scheduled")
        report = run_maintenance(s3_services, policy)
        assert report.failed == [] and report.passages_embedded == added["vectors_pending"]
        assert report.passages_pending == 0
        _check_done(*run(_read(url, episode_id)))
