"""HTTP/1.1 over a raw socket, for transport tests that a well-behaved client cannot send."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any

HOST = "127.0.0.1"


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Exchange:
    responses: list[RawResponse] = field(default_factory=list)
    closed: bool = False  # the server closed the connection
    seconds: float = 0.0  # from sending to the last response (or the close)

    @property
    def statuses(self) -> list[int]:
        return [r.status for r in self.responses]


def request(
    body: bytes | str = b"",
    *,
    headers: dict[str, str] | list[tuple[str, str]] | None = None,
    method: str = "POST",
    path: str = "/mcp",
    length: bool = True,
) -> bytes:
    """A request as bytes; default headers for a JSON POST to /mcp on a loopback server."""
    data = body.encode() if isinstance(body, str) else body
    hdrs: list[tuple[str, str]] = [
        ("Host", "127.0.0.1"),
        ("Content-Type", "application/json"),
        ("Accept", "application/json"),
    ]
    extra = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    names = {k.lower() for k, _ in extra}
    hdrs = [(k, v) for k, v in hdrs if k.lower() not in names] + extra
    if length and "content-length" not in names and "transfer-encoding" not in names:
        hdrs.append(("Content-Length", str(len(data))))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs) + "\r\n"
    return head.encode("utf-8") + data


def ping(msg_id: int = 1) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "ping"})


def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def connect(port: int, timeout: float = 10.0) -> socket.socket:
    sock = socket.create_connection((HOST, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def exchange(
    port: int, data: bytes, *, expect: int = 1, timeout: float = 5.0, grace: float = 0.5
) -> Exchange:
    """Send `data` on a fresh connection; read until `expect` responses arrived (or the server
    closed, or `timeout`), then `grace` seconds more for anything else it sends."""
    with connect(port, timeout) as sock:
        sock.sendall(data)
        return read(sock, expect=expect, timeout=timeout, grace=grace)


def read(sock: socket.socket, *, expect: int, timeout: float, grace: float) -> Exchange:
    started = time.monotonic()
    result = Exchange()
    buf = b""
    deadline = started + timeout
    while True:
        if len(result.responses) >= expect:
            deadline = min(deadline, time.monotonic() + grace)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        sock.settimeout(remaining)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            data = b""
        if not data:
            result.closed = True
            buf, _ = _parse(buf, result, eof=True)
            break
        buf += data
        buf, parsed = _parse(buf, result, eof=False)
        if parsed:
            result.seconds = time.monotonic() - started
    if result.closed and not result.seconds:
        result.seconds = time.monotonic() - started
    return result


def _parse(buf: bytes, result: Exchange, *, eof: bool) -> tuple[bytes, bool]:
    parsed = False
    while b"\r\n\r\n" in buf:
        head, rest = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            n = int(headers["content-length"])
            if len(rest) < n:
                break
            body, buf = rest[:n], rest[n:]
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            decoded = _dechunk(rest)
            if decoded is None:
                break
            body, buf = decoded
        elif eof:  # delimited by the close
            body, buf = rest, b""
        else:
            break
        result.responses.append(RawResponse(status, headers, body))
        parsed = True
    return buf, parsed


def _dechunk(data: bytes) -> tuple[bytes, bytes] | None:
    body = b""
    while b"\r\n" in data:
        size_line, rest = data.split(b"\r\n", 1)
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return (body, rest[2:]) if rest.startswith(b"\r\n") else None
        if len(rest) < size + 2:
            return None
        body, data = body + rest[:size], rest[size + 2 :]
    return None
