"""A cold process searches shards another process wrote: fresh servers on the same store."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memlake.config import Settings
from memlake.mcp.server import build_app
from memlake.services import Services
from memlake.store.s3 import S3Store
from tests.support.counting import RecordingStore

from .conftest import API_KEYS, TOKENS
from .mcp_helpers import call, connect, run, serve_in_thread, serve_subprocess

EPISODES = 70  # more than one tail shard (64), so the cold reader loads a sealed one too


@contextlib.contextmanager
def local_lake(tmp_path: Path) -> Iterator[Callable[[], Any]]:
    def fresh_server() -> Any:
        return serve_subprocess(tmp_path, {"MEMLAKE_API_KEYS": API_KEYS})

    yield fresh_server


@contextlib.contextmanager
def s3_lake(tmp_path: Path) -> Iterator[Callable[[], Any]]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="memlake-cold")
        settings = Settings(store="s3", bucket="memlake-cold", api_keys=tuple(API_KEYS.split(",")))

        def fresh_server() -> Any:
            store = RecordingStore(S3Store("memlake-cold", client=client))
            fresh_server.store = store  # type: ignore[attr-defined]
            return serve_in_thread(build_app(Services.build(settings, store), host="127.0.0.1"))

        yield fresh_server


@pytest.mark.parametrize("lake", [local_lake, s3_lake], ids=["local", "s3"])
def test_fresh_process_loads_shards_from_the_store(lake: Any, tmp_path: Path) -> None:
    with lake(tmp_path) as fresh_server:
        ids: dict[int, str] = {}
        with fresh_server() as url:

            async def write() -> None:
                async with connect(url, TOKENS["alpha"]) as client:
                    for i in range(EPISODES):
                        text = f"Logbook entry {i}: checked the weather station number w{i}."
                        if i == 3:
                            text += " The anemometer was replaced by a technician named Oyelaran."
                        out = await call(
                            client, "add_episode", {"content": text, "context": "cold"}
                        )
                        ids[i] = out["id"]
                    await call(client, "delete_episode", {"id": ids[5]})

            run(write())

        with fresh_server() as url:  # a new process (or a new Lake and cache): nothing in memory

            async def read() -> None:
                async with connect(url, TOKENS["alpha"]) as client:
                    out = await call(client, "search_episodes", {"query": "Oyelaran", "limit": 3})
                    assert out["episodes"][0]["id"] == ids[3]  # in the first, sealed shard
                    out = await call(client, "search_episodes", {"query": "w69", "limit": 3})
                    assert out["episodes"][0]["id"] == ids[69]  # in the tail
                    out = await call(
                        client, "search_episodes", {"query": "weather station w5", "limit": 50}
                    )
                    assert ids[5] not in {h["id"] for h in out["episodes"]}  # deleted
                    out = await call(
                        client, "search_episodes", {"query": "who fixed the wind gauge?"}
                    )
                    assert out["episodes"][0]["id"] == ids[3]

            run(read())
            store = getattr(fresh_server, "store", None)
            if store is not None:  # the reader fetched the shards, never rebuilt or wrote any
                shard_gets = [k for k in store.keys_read if "/search/" in k]
                assert len(set(shard_gets)) == 2
                assert store.writes == 0
