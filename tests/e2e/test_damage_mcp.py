"""Damage as an agent meets it through /mcp (issue 27), on the local lake (a `memlake serve`
process) and on moto S3: a damaged segment is a `corrupt_object` tool error naming it (not
retryable, the hint names memlake check) for the reads that need it; other reads and writes
go on; listings answer what is readable with an `unreadable` note (issue 47); after `memlake
repair` the tenant lists in full again and takes writes.

Each phase is a fresh server, as a damaged object is found by a reader that did not write it
(the writer keeps what it wrote in memory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memlake.config import Settings
from memlake.integrity.check import check_tenant
from memlake.integrity.repair import repair_tenant
from memlake.mcp.server import build_app
from memlake.services import Services
from memlake.store.base import ObjectStore
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store

from .mcp_helpers import call, connect, run, serve_in_thread
from .serverproc import start_server

BUCKET = "memlake-damage"


class Lakes:
    """A lake behind fresh servers: `serve()` starts one, `store` reaches the same objects."""

    def __init__(
        self,
        store: ObjectStore,
        serve: Callable[[], AbstractContextManager[str]],
        settings: Settings,
    ) -> None:
        self.store, self.serve, self.settings = store, serve, settings

    def services(self) -> Services:
        return Services.build(self.settings, self.store)


@pytest.fixture
def local_lakes(tmp_path: Path) -> Iterator[Lakes]:
    @contextmanager
    def serve() -> Iterator[str]:
        with start_server(tmp_path) as server:
            yield server.mcp_url

    yield Lakes(LocalStore(tmp_path), serve, Settings(store="local", data_dir=tmp_path))


@pytest.fixture
def s3_lakes() -> Iterator[Lakes]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        settings = Settings(store="s3", bucket=BUCKET)

        @contextmanager
        def serve() -> Iterator[str]:
            services = Services.build(settings, S3Store(BUCKET, client=client))
            with serve_in_thread(build_app(services, host="127.0.0.1")) as url:
                yield url

        yield Lakes(S3Store(BUCKET, client=client), serve, settings)


def tools(url: str, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    async def scenario() -> list[dict[str, Any]]:
        async with connect(url) as client:
            return [await call(client, name, args) for name, args in calls]

    return run(scenario())  # type: ignore[no-any-return]


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_damaged_segment_through_mcp(where: str, request: pytest.FixtureRequest) -> None:
    lakes: Lakes = request.getfixturevalue(f"{where}_lakes")
    with lakes.serve() as url:
        a, b = tools(
            url,
            ("add_episode", {"content": "alpaca shearing schedule for spring"}),
            ("add_episode", {"content": "beekeeping notes on the north hives"}),
        )
    snap = lakes.services().lake.snapshot("default")
    key = snap.manifest.tables["episodes"][0].key
    data = bytearray(lakes.store.get(key))
    data[len(data) // 2] ^= 0xFF  # bit rot
    lakes.store.put(key, bytes(data))
    with lakes.serve() as url:
        got_a, got_b, added, listed, found_list = tools(
            url,
            ("get_episode", {"id": a["id"]}),
            ("get_episode", {"id": b["id"]}),
            ("add_episode", {"content": "cider pressing in the barn"}),
            ("list_episodes", {}),
            ("find_episodes", {}),
        )
    err = got_a.get("error", {})
    assert got_a["is_error"] and err["code"] == "corrupt_object", got_a
    assert key in err["message"] and "memlake check" in err["hint"] and not err.get("retryable")
    assert not got_b["is_error"] and got_b["id"] == b["id"]
    assert not added["is_error"], added  # writes do not need the damaged segment
    for partial in (listed, found_list):  # what is readable, and a note of what is not
        assert not partial["is_error"], partial
        assert {e["id"] for e in partial["episodes"]} == {b["id"], added["id"]}, partial
        assert "1 of " in partial["unreadable"] and "memlake repair" in partial["unreadable"]
    services = lakes.services()
    report = repair_tenant(services.lake, services.search, "default", apply=True)
    assert report.rows_lost == 1 and check_tenant(lakes.store, "default").clean
    with lakes.serve() as url:
        listed, more, found = tools(
            url,
            ("list_episodes", {}),
            ("add_episode", {"content": "dovecote repairs after the storm"}),
            ("search_episodes", {"query": "beekeeping hives"}),
        )
    assert not listed["is_error"] and not more["is_error"], (listed, more)
    assert "unreadable" not in listed
    ids = {e["id"] for e in listed["episodes"]}
    assert b["id"] in ids and added["id"] in ids and a["id"] not in ids
    assert found["episodes"][0]["id"] == b["id"]
