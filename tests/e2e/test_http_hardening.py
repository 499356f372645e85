"""The local door's HTTP transport against clients no library would be: raw sockets.

One `memlake serve` subprocess with API keys and short timeouts (1 s idle, 1 s body, 24
connections, 1 MiB bodies). Each case names the defect of issue 10 it guards.
"""

from __future__ import annotations

import json
import socket
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from .rawhttp import Exchange, chunked, connect, exchange, ping, read, request
from .serverproc import ServerProcess, start_server

TOKEN = "tok-http-hardening"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LIMIT = 1024 * 1024
TIMEOUT = 1  # seconds, idle and body
MAX_CONNECTIONS = 24


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    env = {
        "MEMLAKE_API_KEYS": f"{TOKEN}:alpha",
        "MEMLAKE_HTTP_IDLE_TIMEOUT": str(TIMEOUT),
        "MEMLAKE_HTTP_BODY_TIMEOUT": str(TIMEOUT),
        "MEMLAKE_HTTP_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
        "MEMLAKE_MAX_REQUEST_BYTES": str(LIMIT),
    }
    with start_server(tmp_path_factory.mktemp("lake"), env) as proc:
        yield proc


def port(server: ServerProcess) -> int:
    return int(server.base_url.rsplit(":", 1)[1])


def assert_no_traceback(server: ServerProcess) -> None:
    log = server.log()
    for sign in ("Traceback", "BrokenPipe", "ConnectionReset", "Exception"):
        assert sign not in log, log[-3000:]


def threads(server: ServerProcess) -> int:
    status = Path(f"/proc/{server.proc.pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads")))


@dataclass(frozen=True)
class Case:
    name: str
    data: bytes
    statuses: list[int]
    closes: bool  # the server must close the connection after answering


SMUGGLED = request(ping(2), headers=AUTH)
TERMINATOR = b"0\r\n\r\n"
BAD_LENGTHS = ["abc", "43.0", "0x2b", "\u0664\u0663", "-1", "+43", "43, 44", ""]
CHUNKED = {**AUTH, "Transfer-Encoding": "chunked"}
CASES = [
    # defect 2: a chunked body is a body, never the next request
    Case(
        "chunked body read as the body",
        request(chunked(ping().encode()[:9], ping().encode()[9:]), headers=CHUNKED)
        + request(ping(2), headers=AUTH),
        [200, 200],
        closes=False,
    ),
    Case(
        "chunk data is never parsed as a request",
        request(SMUGGLED, headers=CHUNKED),
        [400],
        closes=True,
    ),
    Case(
        "Content-Length together with Transfer-Encoding",
        request(
            TERMINATOR + SMUGGLED,
            headers={
                **CHUNKED,
                "Content-Length": str(len(TERMINATOR)),
            },
        ),
        [400],
        closes=True,
    ),
    Case(
        "Transfer-Encoding other than chunked",
        request(ping(), headers={**AUTH, "Transfer-Encoding": "gzip, chunked"}),
        [400],
        closes=True,
    ),
    # defect 7 (and 6: -1 must not read until EOF): bad Content-Length values get 400
    *(
        Case(
            f"Content-Length {value!r}",
            request(ping(), headers={**AUTH, "Content-Length": value}),
            [400],
            closes=True,
        )
        for value in BAD_LENGTHS
    ),
    # defect 12: duplicate or malformed Host headers do not pass the DNS-rebinding check
    Case(
        "duplicate Host headers",
        request(ping(), headers=[("Host", "127.0.0.1:1"), ("Host", "evil.example"), *AUTH.items()]),
        [400],
        closes=True,
    ),
    Case(
        "one Host header listing two hosts",
        request(ping(), headers={"Host": "127.0.0.1:1, evil.example", **AUTH}),
        [403],
        closes=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_adversarial_request(server: ServerProcess, case: Case) -> None:
    got = exchange(port(server), case.data, expect=len(case.statuses), timeout=4)
    assert got.statuses == case.statuses, got.responses
    if case.closes:
        assert got.closed, "the connection must be closed after this answer"
    assert got.seconds < 3, got
    if case.statuses[0] == 200:
        assert got.responses[0].json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert_no_traceback(server)


def test_server_header_names_no_python_version(server: ServerProcess) -> None:
    """Defect 12: the Server header said "memlake Python/3.11.x"."""
    got = exchange(port(server), request(ping(), headers=AUTH))
    assert got.statuses == [200]
    assert "python" not in got.responses[0].headers.get("server", "").lower()


@pytest.mark.parametrize("length", [LIMIT, 16 * 1024 * 1024])
def test_unauthenticated_body_is_not_read(server: ServerProcess, length: int) -> None:
    """Defect 6: credentials are checked on the headers; the announced body is never awaited."""
    got = exchange(port(server), request(headers={"Content-Length": str(length)}), timeout=4)
    assert got.statuses == [401] and got.closed
    assert got.seconds < 2, got


def test_body_over_the_limit_is_refused_while_it_arrives(server: ServerProcess) -> None:
    """Defects 2 and 6: a chunked body announces no length; it is counted as it arrives."""
    half = LIMIT // 2 + 1
    head = request(headers=CHUNKED)
    # two chunks whose sum passes the limit at their very last byte (nothing left unread)
    data = head + b"%x\r\n" % half + b" " * half + b"\r\n%x\r\n" % half + b" " * half
    got = exchange(port(server), data, timeout=4)
    assert got.statuses == [413] and got.closed
    assert got.responses[0].json()["error"]["message"] == f"Request body over {LIMIT} bytes"


def test_announced_body_over_the_limit_is_refused_before_it_arrives(server: ServerProcess) -> None:
    got = exchange(port(server), request(headers={**AUTH, "Content-Length": str(LIMIT + 1)}))
    assert got.statuses == [413] and got.closed and got.seconds < 2


def test_slow_body_times_out(server: ServerProcess) -> None:
    """Defect 6: a body that stops arriving is answered 408 after the body timeout."""
    data = request(headers={**AUTH, "Content-Length": "100"}) + b'{"jsonrpc"'
    got = exchange(port(server), data, timeout=TIMEOUT + 3)
    assert got.statuses == [408] and got.closed
    assert TIMEOUT - 0.2 < got.seconds < TIMEOUT + 2


def test_connection_sending_nothing_is_closed(server: ServerProcess) -> None:
    """Defect 6: a half-open connection is closed after the idle timeout."""
    with connect(port(server)) as sock:
        got = read(sock, expect=1, timeout=TIMEOUT + 3, grace=0)
    assert got.closed and got.statuses == []
    assert got.seconds < TIMEOUT + 2


def test_trickled_headers_are_cut_off(server: ServerProcess) -> None:
    """Defect 6: a slowloris client (a header line every 0.2 s) is cut off at the idle timeout."""
    started = time.monotonic()
    with connect(port(server)) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        with pytest.raises(OSError):  # EPIPE or ECONNRESET once the server has closed
            for i in range(int((TIMEOUT + 3) / 0.2)):
                time.sleep(0.2)
                sock.sendall(b"X-Filler-%d: x\r\n" % i)
    assert time.monotonic() - started < TIMEOUT + 2.5


def test_idle_keep_alive_connection_is_closed(server: ServerProcess) -> None:
    """Defect 6: so is a keep-alive connection that sends no next request."""
    with connect(port(server)) as sock:
        sock.sendall(request(ping(), headers=AUTH))
        got: Exchange = read(sock, expect=1, timeout=TIMEOUT + 3, grace=TIMEOUT + 2)
    assert got.statuses == [200] and got.closed


def test_half_open_connections_hold_no_threads(server: ServerProcess) -> None:
    """Defect 6: each stalled connection held a thread; now they wait on the event loop."""
    before = threads(server)
    socks = [connect(port(server)) for _ in range(100)]
    try:
        for sock in socks:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Len")
        time.sleep(0.3)
        assert threads(server) - before < 10
    finally:
        for sock in socks:
            sock.close()
    time.sleep(0.2)


def test_connections_beyond_the_limit_get_503(server: ServerProcess) -> None:
    """Defect 6: open connections are bounded; beyond the bound a request gets 503 at once."""
    idle = [connect(port(server)) for _ in range(MAX_CONNECTIONS)]
    try:
        time.sleep(0.1)  # let the server accept them (they time out after TIMEOUT)
        got = exchange(port(server), request(ping(), headers=AUTH))
        assert got.statuses == [503] and got.closed
    finally:
        for sock in idle:
            sock.close()
    time.sleep(0.2)
    assert exchange(port(server), request(ping(), headers=AUTH)).statuses == [200]


def test_client_disconnect_mid_response_logs_no_traceback(server: ServerProcess) -> None:
    """Defect 12: every client disconnect logged a BrokenPipe/ConnectionReset traceback."""
    call = {"name": "list_episodes", "arguments": {}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
    for _ in range(20):
        sock = connect(port(server))
        sock.sendall(request(body, headers=AUTH))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # RST before the answer is written
    time.sleep(0.5)
    assert exchange(port(server), request(ping(), headers=AUTH)).statuses == [200]
    assert_no_traceback(server)


def test_keep_alive_round_trip_has_no_nagle_delay(server: ServerProcess) -> None:
    """httpx writes a request's head and body separately, as the server does its answer:
    without TCP_NODELAY every round trip waits ~40 ms for a delayed ACK."""
    times = []
    with httpx.Client(headers={**AUTH, "content-type": "application/json"}) as http:
        for i in range(15):
            started = time.perf_counter()
            resp = http.post(server.mcp_url, content=ping(i))
            times.append(time.perf_counter() - started)
            assert resp.status_code == 200
    assert statistics.median(times) < 0.03, times  # Nagle's delay: 40 ms or more


def test_lambda_door_never_imports_the_http_server() -> None:
    """The Lambda handler keeps its light import path: no uvicorn, no h11, no local server."""
    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys; sys.path.insert(0, 'functions/mcp'); import app; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'uvicorn', 'h11'}), "
        "'memlake.mcp.server' in sys.modules, 'memlake.mcp.asgi' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "False", "False"]
