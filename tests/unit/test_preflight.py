"""McpHttpApp.preflight: the header-only checks a server runs before it reads a body."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlake.config import Settings
from memlake.mcp.http import HttpRequest, McpHttpApp
from memlake.server import build_app
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
