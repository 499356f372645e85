"""Bad input gets a clear error a model can act on, and changes nothing in the lake."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from .conftest import TOKENS, ServerUnderTest
from .mcp_helpers import assert_tool_error_changes_nothing, call, connect, run

BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("add_episode", {"content": 123}, "content"),
    ("add_episode", {"content": ""}, "content"),
    ("add_episode", {"content": "   \n "}, "content is empty"),
    ("add_episode", {}, "content"),
    ("add_episode", {"content": "x", "summary": ["not", "text"]}, "summary"),
    ("add_episode", {"content": "x", "metadata": "not an object"}, "metadata"),
    (
        "add_episode",
        {"content": "x", "metadata": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}},
        "deeper",
    ),
    ("add_episode", {"content": "x", "metadata": {"blob": "y" * 20_000}}, "limit is"),
    ("add_episode", {"content": "x", "entity_ids": ["../etc"]}, "not a valid id"),
    ("add_episode", {"content": "x", "started_at": "yesterday"}, "ISO 8601"),
    (
        "add_episode",
        {"content": "x", "started_at": "2026-02-02", "ended_at": "2026-01-01"},
        "after",
    ),
    ("add_episode", {"content": "x", "context": "a\nb"}, "context"),
    ("add_episode", {"content": "x", "surprise": 1}, "unknown argument"),
    ("add_episode", {"content": "x" * (10 * 1024 * 1024)}, "the limit is"),
    ("get_episode", {"id": "../x"}, "not a valid id"),
    ("get_episode", {"id": "a/b"}, "not a valid id"),
    ("get_episode", {"id": ""}, "id"),
    ("get_episode", {"id": 7}, "id"),
    ("delete_episode", {"id": "../../tenants/beta"}, "not a valid id"),
    ("list_episodes", {"limit": 0}, "limit"),
    ("list_episodes", {"limit": 1000}, "limit"),
    ("list_episodes", {"cursor": "%%%"}, "cursor"),
    ("list_episodes", {"time_start": "2026-13-45"}, "ISO 8601"),
]


@pytest.mark.parametrize(("tool", "args", "expect"), BAD_CALLS, ids=lambda v: str(v)[:40])
def test_bad_tool_arguments_are_tool_errors(
    server: ServerUnderTest, tool: str, args: dict[str, Any], expect: str
) -> None:
    assert_tool_error_changes_nothing(server, TOKENS["alpha"], tool, args, expect)


def test_unknown_tool_is_a_protocol_error(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as client:
            with pytest.raises(MCPError) as info:
                await client.call_tool("drop_all_tables", {})
            assert info.value.error.code == -32602
            assert "Unknown tool" in info.value.error.message

    run(scenario())


def test_another_tenants_id_is_not_found(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with connect(server.url, TOKENS["beta"]) as beta:
            owned = await call(beta, "add_episode", {"content": "beta only"})
        before = server.objects()
        async with connect(server.url, TOKENS["alpha"]) as alpha:
            got = await call(alpha, "get_episode", {"id": owned["id"]})
            assert got["is_error"] and got["error"]["code"] == "not_found"
            deleted = await call(alpha, "delete_episode", {"id": owned["id"]})
            assert deleted["deleted"] == 0
        assert server.objects() == before

    run(scenario())


def rpc(
    url: str, body: bytes | str, token: str | None = TOKENS["alpha"], **headers: str
) -> httpx.Response:
    hdrs = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if token:
        hdrs["authorization"] = f"Bearer {token}"
    hdrs.update({k.replace("_", "-"): v for k, v in headers.items()})
    return httpx.post(url, content=body, headers=hdrs, timeout=60)


def test_missing_or_wrong_token_is_401(server: ServerUnderTest) -> None:
    body = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    assert rpc(server.url, body, token=None).status_code == 401
    resp = rpc(server.url, body, token="nope")
    assert resp.status_code == 401
    assert resp.headers["www-authenticate"].startswith("Bearer")
    assert rpc(server.url, body).status_code == 200


def test_malformed_json_is_a_parse_error(server: ServerUnderTest) -> None:
    before = server.objects()
    resp = rpc(server.url, '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {')
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == -32700
    assert server.objects() == before
