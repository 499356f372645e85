"""The stdio door line by line, in process (no subprocess): the session rules, hostile lines,
bounds and signals. tests/e2e/test_stdio.py runs the real process with the mcp client."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memlake.config import Settings
from memlake.context import Principal
from memlake.mcp import rpc
from memlake.mcp.stdio import StdioServer, _Stopped
from memlake.services import Services
from memlake.store.local import LocalStore

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def req(msg_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def call(msg_id: Any, name: str, arguments: dict[str, Any], meta: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = META
    return req(msg_id, "tools/call", params)


def make_server(tmp_path: Path, wire_in: Any, **settings: Any) -> tuple[StdioServer, io.BytesIO]:
    cfg = Settings(data_dir=tmp_path, **settings)
    services = Services.build(cfg, LocalStore(tmp_path))
    out = io.BytesIO()
    return StdioServer(services, Principal("default", "stdio"), wire_in, out), out


def talk(tmp_path: Path, *lines: Any, **settings: Any) -> list[dict[str, Any]]:
    """Feed `lines` (dicts are encoded, bytes sent as they are) and return the answers; checks
    that the output is nothing but one JSON message per line."""
    raw = b"".join(
        line if isinstance(line, bytes) else json.dumps(line).encode() + b"\n" for line in lines
    )
    server, out = make_server(tmp_path, io.BytesIO(raw), **settings)
    server.serve()
    text = out.getvalue()
    assert text == b"" or text.endswith(b"\n")
    return [json.loads(line) for line in text.decode("utf-8").split("\n")[:-1]]


def test_handshake_then_tools_and_notifications_answer_nothing(tmp_path: Path) -> None:
    out = talk(tmp_path, INIT, INITIALIZED, req(1, "tools/list"), req(2, "ping"))
    assert [m["id"] for m in out] == [0, 1, 2]  # the notification gets no line
    assert out[0]["result"]["protocolVersion"] == "2025-11-25"
    assert out[0]["result"]["instructions"]
    assert any(t["name"] == "add_episode" for t in out[1]["result"]["tools"])
    assert "resultType" not in out[1]["result"]  # handshake era: no 2026 fields
    assert out[2]["result"] == {}


def test_requests_before_initialize_are_refused_but_ping_and_discover_answer(
    tmp_path: Path,
) -> None:
    out = talk(tmp_path, req(1, "tools/list"), req(2, "ping"), req(3, "server/discover"), INIT)
    assert out[0]["error"]["code"] == -32600 and "initialize first" in out[0]["error"]["message"]
    assert out[1]["result"] == {}
    assert MODERN in out[2]["result"]["supportedVersions"]
    assert "result" in out[3]  # discover fixed nothing: the handshake may still follow


def test_a_handshake_connection_refuses_the_envelope_and_a_second_initialize(
    tmp_path: Path,
) -> None:
    out = talk(tmp_path, INIT, req(1, "tools/list", {"_meta": META}), {**INIT, "id": 2})
    assert out[1]["error"]["code"] == -32600 and "envelope" in out[1]["error"]["message"]
    assert out[2]["error"]["code"] == -32600 and "Already initialized" in out[2]["error"]["message"]


def test_a_connection_opened_with_the_envelope_speaks_2026(tmp_path: Path) -> None:
    out = talk(
        tmp_path,
        req(1, "server/discover", {"_meta": META}),
        req(2, "tools/list", {"_meta": META}),
        call(3, "add_episode", {"content": "modern over stdio"}, meta=True),
        req(4, "tools/list"),
        INIT,
    )
    assert out[0]["result"]["resultType"] == "complete"
    assert out[1]["result"]["ttlMs"] == 0 and out[1]["result"]["cacheScope"] == "private"
    assert out[2]["result"]["isError"] is False and out[2]["result"]["resultType"] == "complete"
    # without the envelope on a 2026 connection: invalid params naming it
    assert out[3]["error"]["code"] == -32602 and "_meta" in out[3]["error"]["message"]
    assert out[4]["error"]["code"] == -32022
    assert out[4]["error"]["data"]["supported"] == [MODERN]


def test_an_envelope_with_an_unknown_version_or_no_capabilities(tmp_path: Path) -> None:
    old = {**META, "io.modelcontextprotocol/protocolVersion": "1900-01-01"}
    bare = {"io.modelcontextprotocol/protocolVersion": MODERN}
    out = talk(
        tmp_path, req(1, "tools/list", {"_meta": old}), req(2, "tools/list", {"_meta": bare})
    )
    assert out[0]["error"]["code"] == -32022
    assert out[0]["error"]["data"]["requested"] == "1900-01-01"
    assert out[1]["error"]["code"] == -32602


def test_hostile_lines_get_json_rpc_errors_and_the_next_line_is_served(tmp_path: Path) -> None:
    deep = b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"a":' + b"[" * 200 + b"]" * 200
    out = talk(
        tmp_path,
        INIT,
        b"this is not json\n",
        b"\n",  # a blank line is skipped
        b'{"jsonrpc":"2.0","id":1,"method":"ping"\xff}\n',
        deep + b"}}\n",
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}\n',
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x\\udc00"}}\n',
        call(3, "add_episode", {"content": "bad \ud800 half"}),
        b'[{"jsonrpc":"2.0","id":4,"method":"ping"}]\n',
        b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":NaN}}\n',
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        req(6, "no/such/method"),
        req(7, "ping"),
    )
    codes = [m.get("error", {}).get("code") for m in out[1:-1]]
    assert codes == [-32700, -32700, -32700, -32600, -32602, None, -32600, -32700, -32600, -32601]
    assert "not valid UTF-8" in out[2]["error"]["message"]
    assert "deeper than" in out[3]["error"]["message"]
    assert out[4]["id"] is None  # a lone surrogate is never echoed
    tool_error = out[6]["result"]
    assert tool_error["isError"] is True and "surrogate" in tool_error["content"][0]["text"]
    assert out[-1] == {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_a_line_over_the_limit_is_refused_without_being_held(tmp_path: Path) -> None:
    big = call(1, "add_episode", {"content": "x" * 5000})
    out = talk(tmp_path, INIT, big, req(2, "ping"), max_request_bytes=1000)
    assert out[1] == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Request over 1000 bytes; send smaller messages"},
    }
    assert out[2]["result"] == {}

    reads: list[int] = []

    class Counting(io.BytesIO):
        def readline(self, size: int | None = -1) -> bytes:
            line = super().readline(size)
            reads.append(len(line))
            return line

    huge = b'{"a":"' + b"y" * 3_000_000 + b'"}\n'
    server, out_buf = make_server(tmp_path, Counting(huge + b"\n"), max_request_bytes=1000)
    server.serve()
    assert max(reads) <= 1 << 16  # read in chunks: never the whole line at once
    assert json.loads(out_buf.getvalue())["error"]["code"] == -32600


def test_exactly_the_limit_passes_and_a_last_line_needs_no_newline(tmp_path: Path) -> None:
    ping = json.dumps(req(1, "ping")).encode()
    out = talk(tmp_path, INIT, ping + b"\n", ping, max_request_bytes=len(ping))
    assert [m.get("result") for m in out[1:]] == [{}, {}]


def test_each_answer_is_one_line_whatever_the_content(tmp_path: Path) -> None:
    text = 'line one\nline two\r\n\u2028\u2029 "quoted" \\ tab\t end'
    out = talk(tmp_path, INIT, call(1, "add_episode", {"content": text}))
    stored = json.loads(out[1]["result"]["content"][0]["text"])
    assert stored["content"] == text


def test_a_bug_of_ours_is_an_internal_error_and_serving_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = rpc.dispatch

    def broken(method: str, *args: Any, **kwargs: Any) -> Any:
        if method == "tools/list":
            raise RuntimeError("boom")
        return real(method, *args, **kwargs)

    monkeypatch.setattr(rpc, "dispatch", broken)
    out = talk(tmp_path, INIT, req("a", "tools/list"), req(2, "ping"))
    assert out[1]["id"] == "a" and out[1]["error"]["code"] == -32603
    assert "reference" in out[1]["error"]["message"] and "boom" not in json.dumps(out[1])
    assert out[2]["result"] == {}


def test_a_signal_while_waiting_stops_at_once(tmp_path: Path) -> None:
    class Interrupted(io.BytesIO):
        def readline(self, size: int | None = -1) -> bytes:
            server.on_signal(15, None)  # what the SIGTERM handler does mid-read
            raise AssertionError("on_signal should have raised")

    server, out = make_server(tmp_path, Interrupted())
    server.serve()  # returns, no exception
    assert server.stopping and out.getvalue() == b""
    with pytest.raises(_Stopped):
        server.on_signal(15, None)


def test_a_signal_during_a_request_lets_it_finish_then_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [INIT, call(1, "add_episode", {"content": "finish me"}), req(2, "ping")]
    wire = io.BytesIO(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
    server, out = make_server(tmp_path, wire)
    real = rpc.dispatch

    def signalled(method: str, *args: Any, **kwargs: Any) -> Any:
        if method == "tools/call":
            server.on_signal(15, None)  # arrives while the tool runs: must not raise
        return real(method, *args, **kwargs)

    monkeypatch.setattr(rpc, "dispatch", signalled)
    server.serve()
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [a["id"] for a in answers] == [0, 1]  # the tool's answer went out; ping never read
    assert answers[1]["result"]["isError"] is False


def test_a_closed_output_ends_serving_quietly(tmp_path: Path) -> None:
    class Closed(io.BytesIO):
        def write(self, data: Any) -> int:
            raise BrokenPipeError

    server, _ = make_server(tmp_path, io.BytesIO(json.dumps(INIT).encode() + b"\n"))
    server.wire_out = Closed()
    server.serve()  # returns, no exception


SAME_ANSWER = [
    b"not json",
    b'{"jsonrpc":"2.0","id":1,"method":"ping"\xff}',
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
    b'{"jsonrpc":"2.0","id":true,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":7}',
    b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
    b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\\udc00"}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"!!"}}',
    b'{"jsonrpc":"2.0","id":1,"method":"no/such"}',
    b'{"jsonrpc":"2.0","id":"s","method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
]


@pytest.mark.parametrize("body", SAME_ANSWER)
def test_stdio_and_http_answer_a_message_alike(tmp_path: Path, body: bytes) -> None:
    """One function answers both doors: the same message, the same JSON-RPC answer."""
    from memlake.mcp.http import HttpRequest
    from memlake.mcp.server import build_app

    server, _ = make_server(tmp_path, io.BytesIO())
    server.reply(json.dumps(INIT).encode())
    stdio = server.reply(body)
    assert stdio is not None and stdio.body is not None
    headers = {
        "host": "127.0.0.1:8080",
        "content-type": "application/json",
        "accept": "application/json",
        "mcp-protocol-version": "2025-11-25",
    }
    http = build_app(server.services, host="127.0.0.1").handle(
        HttpRequest("POST", "/mcp", headers, body)
    )
    assert json.loads(http.body) == stdio.body
    assert http.status == stdio.status
