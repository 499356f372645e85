"""Idempotency keys end to end through /mcp with the official client, on both lakes.

The lost acknowledgement is real: a raw HTTP request is sent and its connection closed before
the response is read; the server commits anyway, and the client's retry (same key, same
arguments) must get that episode back instead of storing a second one.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import pytest

from .conftest import TOKENS, ServerUnderTest
from .mcp_helpers import assert_tool_error_changes_nothing, call, connect, run

KEYED_TOOLS = ("add_episode", "add_thread", "upsert_concept")


def send_and_hang_up(url: str, token: str, tool: str, arguments: dict[str, Any]) -> None:
    """POST a tools/call and close the connection without reading the answer (a lost ack)."""
    parts = urlsplit(url)
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
    ).encode()
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(head + body)
        sock.shutdown(socket.SHUT_WR)


async def episodes_in(client: Any, context: str) -> list[dict[str, Any]]:
    listed = await call(client, "list_episodes", {"context": context, "limit": 100})
    assert not listed["is_error"], listed
    return listed["episodes"]  # type: ignore[no-any-return]


def test_keyed_tools_document_the_key(mcp_url: str) -> None:
    async def scenario() -> None:
        async with connect(mcp_url, TOKENS["alpha"]) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for name in KEYED_TOOLS:
                prop = tools[name].input_schema["properties"]["idempotency_key"]
                assert "retries safe" in prop["description"]
                assert "idempotency_key" in (tools[name].description or "")

    run(scenario())


def test_retry_after_a_lost_ack_returns_the_first_episode(server: ServerUnderTest) -> None:
    context = f"lost-ack-{uuid.uuid4().hex[:8]}"
    args = {"content": "the deploy failed at 09:14", "context": context}
    key = str(uuid.uuid4())
    send_and_hang_up(server.url, TOKENS["alpha"], "add_episode", {**args, "idempotency_key": key})

    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as client:
            deadline = time.monotonic() + 60
            while not (stored := await episodes_in(client, context)):
                assert time.monotonic() < deadline, "the unacknowledged write never committed"
                time.sleep(0.1)
            retry = await call(client, "add_episode", {**args, "idempotency_key": key})
            assert not retry["is_error"], retry
            assert retry["id"] == stored[0]["id"]  # the first write's id, not a new episode
            assert retry["created_at"] == stored[0]["created_at"]
            again = await call(client, "add_episode", {**args, "idempotency_key": key})
            assert again == retry  # the same result, field for field
            assert [e["id"] for e in await episodes_in(client, context)] == [retry["id"]]
            # without a key a repeat is a new episode, as before
            await call(client, "add_episode", args)
            assert len(await episodes_in(client, context)) == 2

    run(scenario())


def test_thread_and_concept_retries_replay(mcp_url: str) -> None:
    async def scenario() -> None:
        async with connect(mcp_url, TOKENS["alpha"]) as client:
            key = str(uuid.uuid4())
            thread_args = {"title": "retry", "messages": [{"role": "user", "content": "hi"}]}
            first = await call(client, "add_thread", {**thread_args, "idempotency_key": key})
            again = await call(client, "add_thread", {**thread_args, "idempotency_key": key})
            assert not first["is_error"] and again == first
            name = f"Concept {key[:8]}"
            made = await call(client, "upsert_concept", {"name": name, "idempotency_key": key})
            redo = await call(client, "upsert_concept", {"name": name, "idempotency_key": key})
            assert made["created"] is True and redo == made  # replayed: still "created"
            found = await call(client, "find_concepts", {"query": name})
            assert [c["id"] for c in found["concepts"] if c["name"] == name] == [
                made["concept"]["id"]
            ]

    run(scenario())


def test_same_key_other_arguments_is_a_tool_error(server: ServerUnderTest) -> None:
    key = str(uuid.uuid4())

    async def first() -> dict[str, Any]:
        async with connect(server.url, TOKENS["alpha"]) as client:
            return await call(client, "add_episode", {"content": "one", "idempotency_key": key})

    assert not run(first())["is_error"]
    result = assert_tool_error_changes_nothing(
        server,
        TOKENS["alpha"],
        "add_episode",
        {"content": "two", "idempotency_key": key},
        "different arguments",
    )
    assert result["error"]["code"] == "conflict"


@pytest.mark.parametrize("key", ["short", "../../manifest/x" + "y" * 8, "a" * 129])
def test_malformed_key_is_a_tool_error(server: ServerUnderTest, key: str) -> None:
    assert_tool_error_changes_nothing(
        server, TOKENS["alpha"], "add_episode", {"content": "x", "idempotency_key": key}, "key"
    )


def test_keys_are_independent_across_tenants(mcp_url: str) -> None:
    key = str(uuid.uuid4())

    async def scenario() -> None:
        async with (
            connect(mcp_url, TOKENS["alpha"]) as alpha,
            connect(mcp_url, TOKENS["beta"]) as beta,
        ):
            a = await call(alpha, "add_episode", {"content": "alpha", "idempotency_key": key})
            b = await call(beta, "add_episode", {"content": "beta", "idempotency_key": key})
            assert not a["is_error"] and not b["is_error"], (a, b)  # no conflict across tenants
            assert a["id"] != b["id"]
            seen = await call(beta, "get_episode", {"id": a["id"]})
            assert seen["is_error"] and seen["error"]["code"] == "not_found"
            assert await call(beta, "add_episode", {"content": "beta", "idempotency_key": key}) == b

    run(scenario())
