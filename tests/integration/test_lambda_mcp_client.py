"""The official MCP client against the Lambda door: a loopback HTTP server plays API Gateway
(turns each request into a payload 2.0 event with JWT claims, base64 body, and back) in front
of functions/mcp/app.py on moto S3."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from memlake.config import Settings
from memlake.mcp.http import HttpRequest, HttpResponse
from tests.e2e.mcp_helpers import call, connect, run, serve_in_thread

from .lambda_helpers import FakeContext, deployed


@dataclass
class _Services:
    settings: Settings


class FakeApiGateway:
    """What API Gateway does around the function; the bearer token stands in for a verified
    JWT whose `sub` is the token itself (no token: no authorizer claims)."""

    path = "/mcp"

    def __init__(self, handler: Any) -> None:
        self.handler = handler
        self.services = _Services(Settings())

    def preflight(self, req: HttpRequest) -> HttpResponse | None:
        return None  # API Gateway reads the whole body; the function checks everything

    def handle(self, req: HttpRequest) -> HttpResponse:
        ctx: dict[str, Any] = {
            "http": {"method": req.method, "path": req.path},
            "requestId": uuid.uuid4().hex[:16] + "=",
            "stage": "$default",
        }
        auth = req.header("authorization") or ""
        if auth.lower().startswith("bearer "):
            sub = auth.split(" ", 1)[1]
            ctx["authorizer"] = {"jwt": {"claims": {"sub": sub, "jti": sub + "-jti"}}}
        event = {
            "version": "2.0",
            "rawPath": req.path,
            "headers": dict(req.headers),
            "requestContext": ctx,
            "body": base64.b64encode(req.body).decode(),
            "isBase64Encoded": True,
        }
        out = self.handler(event, FakeContext())
        body = out.get("body", "")
        raw = base64.b64decode(body) if out.get("isBase64Encoded") else body.encode()
        return HttpResponse(out["statusCode"], raw, dict(out.get("headers") or {}))


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with pytest.MonkeyPatch.context() as mp, deployed(mp) as stack:
        gateway = FakeApiGateway(stack.handler())
        with serve_in_thread(gateway) as mcp_url:
            yield mcp_url


def test_the_official_client_works_through_the_lambda_door(url: str) -> None:
    async def scenario() -> None:
        async with connect(url, "alice") as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"add_episode", "get_episode", "list_episodes", "delete_episode"} <= tools
            added = await call(client, "add_episode", {"content": "through the lambda door"})
            got = await call(client, "get_episode", {"id": added["id"]})
            assert got["content"] == "through the lambda door"
            bad = await call(client, "get_episode", {"id": "no/such"})
            assert bad["is_error"] and bad["error"]["code"] == "invalid_argument"
        async with connect(url, "bob") as client:
            other = await call(client, "get_episode", {"id": added["id"]})
            assert other["is_error"] and other["error"]["code"] == "not_found"
            assert (await call(client, "list_episodes", {}))["count"] == 0

    run(scenario())


def test_no_token_is_refused(url: str) -> None:
    async def scenario() -> None:
        async with connect(url, None) as client:
            await client.list_tools()

    with pytest.raises(Exception) as err:
        run(scenario())
    assert "Unauthorized" in repr(err.value)  # the transport's 401 body, as the client saw it
