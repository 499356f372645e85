"""One bad stored row never fails a read for the whole tenant (issue 10, defect 9).

Rows that no tool can write (no created_at, no content, metadata that is not JSON) are put
straight into the lake, as an older version or a hand-made import could have left them, with
the search hooks on so they are indexed too. Through /mcp, on the local lake (a `memlake serve`
process) and on moto S3: list_episodes, find_episodes and search_episodes leave them out and
show the good episode, get_episode of a good id works and of a bad id is a tool error (not
internal_error), and each skipped row is logged with its id and counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memlake.config import Settings
from memlake.episodes import BAD_ROW_METRIC
from memlake.lake import Lake, Transaction
from memlake.mcp.server import build_app
from memlake.observability import counts
from memlake.services import Services
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store

from .mcp_helpers import call, connect, run, serve_in_thread
from .serverproc import start_server

T0 = datetime(2026, 1, 15, 9, 30, tzinfo=UTC)
BAD_ROWS: list[dict[str, Any]] = [
    {"id": "x"},  # the row of the issue: an import accepted it
    {"id": "bad-no-time", "content": "zebra deploy without a time"},
    {"id": "bad-meta", "content": "zebra deploy bad metadata", "created_at": T0, "metadata": "{"},
    {"id": "bad-span", "content": "zebra deploy", "created_at": T0, "qualities": "[1, 2]"},
]
BAD_IDS = {r["id"] for r in BAD_ROWS}


@dataclass
class Door:
    url: str
    lake: Lake  # a lake on the same store, to plant rows with
    log: Callable[[], str]  # what the server logged so far ("" when it runs in this process)


def plant(lake: Lake, tenant: str = "default") -> None:
    def change(txn: Transaction) -> None:
        for row in BAD_ROWS:
            txn.put("episodes", row)

    lake.commit(tenant, change)


@pytest.fixture(scope="module")
def local_door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    data = tmp_path_factory.mktemp("lake")
    with start_server(data) as server:
        lake = Services.build(Settings(store="local", data_dir=data), LocalStore(data)).lake
        yield Door(server.mcp_url, lake, server.log)


@pytest.fixture(scope="module")
def s3_door() -> Iterator[Door]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="memlake-bad-rows")
        settings = Settings(store="s3", bucket="memlake-bad-rows")
        services = Services.build(settings, S3Store("memlake-bad-rows", client=client))
        with serve_in_thread(build_app(services, host="127.0.0.1")) as url:
            yield Door(url, services.lake, lambda: "")


@pytest.mark.parametrize("where", ["local", "s3"])
def test_bad_rows_are_skipped_not_fatal(where: str, request: pytest.FixtureRequest) -> None:
    door: Door = request.getfixturevalue(f"{where}_door")
    skipped_before = counts().get(BAD_ROW_METRIC, 0)

    async def scenario() -> dict[str, Any]:
        async with connect(door.url) as client:
            good = await call(client, "add_episode", {"content": "zebra deploy runbook"})
            plant(door.lake)
            return {
                "good": good,
                "list": await call(client, "list_episodes", {"limit": 100}),
                "find": await call(client, "find_episodes", {}),
                "search": await call(client, "search_episodes", {"query": "zebra deploy"}),
                "get": await call(client, "get_episode", {"id": good["id"]}),
                "get_bad": await call(client, "get_episode", {"id": "bad-meta"}),
                "delete_bad": await call(client, "delete_episode", {"id": "x"}),
            }

    out = run(scenario())
    good_id = out["good"]["id"]
    for tool in ("list", "find", "search"):
        assert not out[tool]["is_error"], out[tool]
        ids = [e["id"] for e in out[tool]["episodes"]]
        assert good_id in ids and not BAD_IDS & set(ids), (tool, ids)
    assert not out["get"]["is_error"] and out["get"]["id"] == good_id
    err = out["get_bad"]["error"]
    assert out["get_bad"]["is_error"] and err["code"] != "internal_error", err
    assert "cannot read" in err["message"] and err["hint"]
    assert not out["delete_bad"]["is_error"], out["delete_bad"]  # the way out the hint names
    if where == "s3":  # the server runs in this process: its counter is ours
        assert counts().get(BAD_ROW_METRIC, 0) - skipped_before >= len(BAD_ROWS)
    else:
        log = door.log()
        for bad in BAD_IDS:
            assert f"skipped unreadable episode row '{bad}'" in log, log[-3000:]
        assert "Traceback" not in log


def test_a_paged_listing_over_bad_rows_reaches_every_good_episode(tmp_path: Path) -> None:
    """Rows without a time sort last; a page boundary on them must not end the listing."""
    from memlake.context import Principal, ToolContext
    from memlake.tools.registry import get_tool

    services = Services.build(Settings(store="local", data_dir=tmp_path), LocalStore(tmp_path))
    ctx = ToolContext(Principal("default"), services)

    def tool(name: str, **args: Any) -> dict[str, Any]:
        spec = get_tool(name)
        assert spec is not None
        return spec.run(ctx, spec.input_model.model_validate(args)).model_dump(mode="json")  # type: ignore[no-any-return]

    good = [tool("add_episode", content=f"episode {i}")["id"] for i in range(3)]
    plant(services.lake)
    seen, cursor = [], None
    for _ in range(10):
        page = tool("list_episodes", limit=2, **({"cursor": cursor} if cursor else {}))
        seen += [e["id"] for e in page["episodes"]]
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    assert sorted(seen) == sorted(good)
