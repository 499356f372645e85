"""Talking to a running memlake through /mcp with the official `mcp` client."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from .serverproc import free_port, start_server

__all__ = [
    "assert_tool_error_changes_nothing",
    "call",
    "connect",
    "free_port",
    "run",
    "serve_in_thread",
    "serve_subprocess",
]

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def serve_subprocess(data_dir: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """`memlake serve` in its own process, as a user starts it; yields the /mcp URL."""
    with start_server(data_dir, env) as server:
        yield server.mcp_url


@contextlib.contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """The same transport on a thread of this process (for moto's in-process mock_aws)."""
    from memlake.mcp.server import serving_in_thread

    with serving_in_thread(app) as url:
        yield url


@contextlib.asynccontextmanager
async def connect(url: str, token: str | None = None, mode: str = "auto") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
            yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call a tool: structuredContent (checked against the text block), or on a tool error the
    {"error": {code, message, hint}} the text block carries."""
    result = await client.call_tool(tool, args)
    text = json.loads(result.content[0].text)  # type: ignore[union-attr]
    if result.is_error:
        assert result.structured_content is None and set(text) == {"error"}, result
        return {"is_error": True, **text}
    assert result.structured_content == text
    return {"is_error": False, **result.structured_content}


async def call_sent(client: Client, tool: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """call(), and the text block as the server sent it (what a model reads)."""
    result = await client.call_tool(tool, args)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, text
    assert result.structured_content == json.loads(text)
    return result.structured_content, text


def assert_tool_error_changes_nothing(
    server: Any, token: str, tool: str, args: dict[str, Any], expect: str
) -> dict[str, Any]:
    """Call a tool with bad input: it must fail as a tool error whose message names `expect`
    and carries a hint, and leave every stored object as it was."""
    before = server.objects()

    async def scenario() -> dict[str, Any]:
        async with connect(server.url, token) as client:
            return await call(client, tool, args)

    result: dict[str, Any] = run(scenario())
    assert result["is_error"], result
    assert expect in result["error"]["message"], result["error"]
    assert result["error"].get("hint"), result["error"]
    assert server.objects() == before  # nothing written
    return result


def run(coro: Any) -> Any:
    return asyncio.run(coro)
