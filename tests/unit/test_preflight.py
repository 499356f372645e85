"""McpHttpApp.preflight, the header-only checks, and the ASGI adapter that runs them first."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from memlake.config import Settings
from memlake.mcp.asgi import McpAsgi
from memlake.mcp.http import HttpRequest, McpHttpApp
from memlake.mcp.server import build_app
from memlake.services import Services
from memlake.store.local import LocalStore

TOKEN = "tok-preflight"
GOOD = {
    "host": "127.0.0.1:8080",
    "content-type": "application/json",
    "accept": "application/json",
    "authorization": f"Bearer {TOKEN}",
}


@pytest.fixture
def app(tmp_path: Path) -> McpHttpApp:
    settings = Settings(data_dir=tmp_path, api_keys=(f"{TOKEN}:alpha",))
    return build_app(Services.build(settings, LocalStore(tmp_path)), host="127.0.0.1")


@pytest.mark.parametrize(
    ("method", "path", "change", "status"),
    [
        ("POST", "/other", {}, 404),
        ("POST", "/mcp", {"host": "evil.example"}, 403),
        ("POST", "/mcp", {"host": "127.0.0.1:1, evil.example"}, 403),
        ("POST", "/mcp", {"host": "127.0.0.1:1 evil.example"}, 403),
        ("POST", "/mcp", {"origin": "https://evil.example"}, 403),
        ("GET", "/mcp", {}, 405),
        ("POST", "/mcp", {"authorization": "Bearer wrong"}, 401),
        ("POST", "/mcp", {"content-type": "text/plain"}, 415),
        ("POST", "/mcp", {"accept": "text/html"}, 406),
    ],
)
def test_preflight_refuses_as_handle_does(
    app: McpHttpApp, method: str, path: str, change: dict[str, str], status: int
) -> None:
    headers = {**GOOD, **change}
    early = app.preflight(HttpRequest(method, path, headers))
    assert early is not None and early.status == status
    full = app.handle(
        HttpRequest(method, path, headers, b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    )
    assert (full.status, full.body) == (early.status, early.body)


@pytest.mark.parametrize("host", ["127.0.0.1:8080", "localhost", "[::1]:9", "LOCALHOST:80"])
def test_preflight_passes_a_good_request_without_its_body(app: McpHttpApp, host: str) -> None:
    assert app.preflight(HttpRequest("POST", "/mcp", {**GOOD, "host": host})) is None


def _asgi(app: McpHttpApp, headers: dict[str, str]) -> list[dict[str, Any]]:
    """One request through the ASGI adapter; fails if the adapter asks for the body."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        raise AssertionError("the body was read")

    async def send(message: Any) -> None:
        sent.append(dict(message))

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    with ThreadPoolExecutor(1) as pool:
        asyncio.run(McpAsgi(app, pool, body_timeout=1)(scope, receive, send))
    return sent


def test_asgi_adapter_refuses_before_reading_the_body(app: McpHttpApp) -> None:
    start, body = _asgi(app, {**GOOD, "authorization": "Bearer wrong", "content-length": "99"})
    assert start["status"] == 401 and (b"connection", b"close") in start["headers"]
    assert json.loads(body["body"])["error"]["message"].startswith("Unauthorized")


def test_asgi_adapter_answers_json_500_when_a_check_raises(tmp_path: Path) -> None:
    def broken(req: HttpRequest) -> None:
        raise RuntimeError("key store down")

    services = Services.build(Settings(data_dir=tmp_path), LocalStore(tmp_path))
    start, body = _asgi(McpHttpApp(services, broken), {**GOOD, "content-length": "99"})
    assert start["status"] == 500
    assert json.loads(body["body"])["error"] == {"code": -32603, "message": "Internal error"}
