"""The Streamable HTTP transport, request by request (no sockets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memlake.config import Settings
from memlake.mcp.http import HttpRequest, HttpResponse
from memlake.mcp.server import build_app
from memlake.services import Services
from memlake.store.local import LocalStore

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture
def app(tmp_path: Path):  # type: ignore[no-untyped-def]
    settings = Settings(data_dir=tmp_path, tools_page_size=2)
    return build_app(Services.build(settings, LocalStore(tmp_path)), host="127.0.0.1")


def post(app: Any, message: Any, **headers: str) -> HttpResponse:
    hdrs = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    hdrs["host"] = "127.0.0.1:8080"
    hdrs.update({k.replace("_", "-").lower(): v for k, v in headers.items()})
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return app.handle(HttpRequest("POST", "/mcp", hdrs, body))


def modern(
    app: Any, method: str, params: dict[str, Any] | None = None, **headers: str
) -> HttpResponse:
    msg = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": META}}
    hdrs = {"mcp_protocol_version": MODERN, "mcp_method": method, **headers}
    return post(app, msg, **hdrs)


@pytest.mark.parametrize(
    ("requested", "answered"),
    [("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"), ("2024-11-05", "2025-11-25")],
)
def test_initialize_negotiates_a_handshake_version(app: Any, requested: str, answered: str) -> None:
    resp = post(
        app,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": requested,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
    )
    result = resp.json()["result"]
    assert resp.status == 200 and result["protocolVersion"] == answered
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert "mcp-session-id" not in resp.headers


def test_notifications_get_202_and_ping_answers_empty(app: Any) -> None:
    assert post(app, {"jsonrpc": "2.0", "method": "notifications/initialized"}).status == 202
    resp = post(
        app, {"jsonrpc": "2.0", "id": 7, "method": "ping"}, mcp_protocol_version="2025-11-25"
    )
    assert resp.json() == {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_get_and_delete_are_405(app: Any) -> None:
    for method in ("GET", "DELETE"):
        resp = app.handle(HttpRequest(method, "/mcp", {"host": "localhost:1"}))
        assert resp.status == 405 and resp.headers["allow"] == "POST"


def test_unsupported_protocol_version_header_is_400(app: Any) -> None:
    resp = post(
        app, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, mcp_protocol_version="1999-01-01"
    )
    assert resp.status == 400
    assert resp.json()["error"]["code"] == -32022
    assert MODERN in resp.json()["error"]["data"]["supported"]


def test_bad_origin_and_bad_host_are_403(app: Any) -> None:
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert post(app, msg, origin="https://evil.example").status == 403
    assert post(app, msg, origin="http://localhost:3000").status == 200
    assert post(app, msg, host="evil.example").status == 403


@pytest.mark.parametrize(
    ("body", "code", "status"),
    [
        (b"{not json", -32700, 400),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, 400),
        (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', -32600, 400),
        (b'{"jsonrpc":"2.0","id":1,"method":"no/such"}', -32601, 404),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}', -32602, 400),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}', -32602, 400),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_episode","arguments":[]}}',
            -32602,
            400,
        ),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"!!"}}', -32602, 400),
    ],
)
def test_json_rpc_errors(app: Any, body: bytes, code: int, status: int) -> None:
    resp = post(app, body)
    assert resp.json()["error"]["code"] == code
    assert resp.status == status


def test_tools_list_pages_with_cursors(app: Any) -> None:
    names, cursor = [], None
    while True:
        params = {"cursor": cursor} if cursor else {}
        result = post(
            app, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
        ).json()["result"]
        assert len(result["tools"]) <= 2
        names += [t["name"] for t in result["tools"]]
        cursor = result.get("nextCursor")
        if not cursor:
            break
    assert names[:4] == ["add_episode", "get_episode", "delete_episode", "list_episodes"]
    assert len(names) == len(set(names))


def test_modern_discover_and_results_carry_result_type(app: Any) -> None:
    result = modern(app, "server/discover").json()["result"]
    assert MODERN in result["supportedVersions"]
    assert result["resultType"] == "complete" and "ttlMs" in result
    listed = modern(app, "tools/list").json()["result"]
    assert listed["resultType"] == "complete" and listed["cacheScope"] == "private"


def test_modern_requests_must_match_their_headers(app: Any) -> None:
    wrong_method = modern(app, "tools/list", mcp_method="tools/call")
    assert wrong_method.status == 400 and wrong_method.json()["error"]["code"] == -32020
    params = {"name": "list_episodes", "arguments": {}}
    no_name = modern(app, "tools/call", params)
    assert no_name.status == 400 and no_name.json()["error"]["code"] == -32020
    ok = modern(app, "tools/call", params, mcp_name="list_episodes")
    assert ok.status == 200 and ok.json()["result"]["isError"] is False
    encoded = modern(app, "tools/call", params, mcp_name="=?base64?bGlzdF9lcGlzb2Rlcw==?=")
    assert encoded.status == 200
    missing_meta = post(
        app,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        mcp_protocol_version=MODERN,
        mcp_method="tools/list",
    )
    assert missing_meta.status == 400 and missing_meta.json()["error"]["code"] == -32602
    removed = modern(app, "ping")
    assert removed.status == 404 and removed.json()["error"]["code"] == -32601


def test_wrong_content_type_is_415(app: Any) -> None:
    resp = post(app, b"{}", content_type="text/plain")
    assert resp.status == 415
