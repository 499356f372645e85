"""The memory browser's files at /ui (memlake.mcp.browser): served by `memlake serve` with a
strict policy, nothing else under /ui, only GET, the loopback Host check; not by the Lambda
door; and the page's same-origin calls to /mcp pass the Origin check while others do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlake.config import Settings
from memlake.mcp.browser import CSP, FILES
from memlake.mcp.http import HttpRequest, McpHttpApp
from memlake.mcp.server import build_app
from memlake.services import Services
from memlake.store.local import LocalStore

HOST = {"host": "127.0.0.1:8080"}
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
POST = {**HOST, "content-type": "application/json", "accept": "application/json"}


@pytest.fixture
def app(tmp_path: Path) -> McpHttpApp:
    return build_app(
        Services.build(Settings(data_dir=tmp_path), LocalStore(tmp_path)), host="127.0.0.1"
    )


@pytest.mark.parametrize("path", ["/ui", "/ui/", *[f"/ui/{name}" for name in FILES]])
def test_every_file_is_served_with_the_policy(app: McpHttpApp, path: str) -> None:
    resp = app.handle(HttpRequest("GET", path, HOST))
    assert resp.status == 200 and resp.body
    assert resp.headers["content-security-policy"] == CSP
    assert resp.headers["x-content-type-options"] == "nosniff"
    name = path.removeprefix("/ui").strip("/") or "index.html"
    assert resp.headers["content-type"] == FILES[name]


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("GET", "/ui/../pyproject.toml", HOST, 404),
        ("GET", "/ui/%2e%2e/browser.py", HOST, 404),
        ("GET", "/ui/browser.py", HOST, 404),
        ("GET", "/ui/app.js/", HOST, 404),
        ("POST", "/ui", HOST, 405),
        ("GET", "/ui", {"host": "evil.example"}, 403),
    ],
)
def test_nothing_else(
    app: McpHttpApp, method: str, path: str, headers: dict[str, str], status: int
) -> None:
    assert app.handle(HttpRequest(method, path, headers)).status == status


def test_the_lambda_door_serves_no_page(app: McpHttpApp) -> None:
    lambda_door = McpHttpApp(app.services, lambda req: None)  # as memlake.mcp.apigw builds it
    assert lambda_door.handle(HttpRequest("GET", "/ui", {})).status == 404


def test_same_origin_calls_from_the_page_pass_the_origin_check(app: McpHttpApp) -> None:
    same = app.handle(
        HttpRequest("POST", "/mcp", {**POST, "origin": "http://127.0.0.1:8080"}, PING)
    )
    assert same.status == 200
    other = {**POST, "origin": "http://evil.example:8080"}
    assert app.handle(HttpRequest("POST", "/mcp", other, PING)).status == 403
    spoofed = {**POST, "host": "evil.example:8080", "origin": "http://evil.example:8080"}
    assert app.handle(HttpRequest("POST", "/mcp", spoofed, PING)).status == 403  # Host check
