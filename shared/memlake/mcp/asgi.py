"""The transport as an ASGI application: what `memlake serve` runs under uvicorn.

The HTTP server (uvicorn over h11) frames requests: it reads chunked bodies, rejects malformed
Content-Length and duplicate Host headers with 400, and bounds header size. This adapter adds
what the server leaves to the application, in this order:

1. a request announcing both Content-Length and Transfer-Encoding is refused (400, close): two
   framings of one body are how requests get smuggled past a proxy;
2. McpHttpApp.preflight() runs on the headers alone, so an unauthenticated or misdirected
   request is answered before one byte of its body is read;
3. the body is read within `body_timeout` seconds in all and at most `max_request_bytes`
   (408 and 413 otherwise);
4. McpHttpApp.handle(), which blocks (it runs tools), runs on a bounded thread pool so the
   event loop keeps serving other connections.

An answer sent before the body was read in full closes the connection: the rest of that body
must never be parsed as a next request. The Lambda door does not import this module.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any

from memlake.mcp.http import HttpRequest, HttpResponse, McpHttpApp, error_response
from memlake.mcp.protocol import INTERNAL_ERROR, INVALID_REQUEST
from memlake.mcp.rpc import error_reply

log = logging.getLogger("memlake.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class _BodyTooLarge(Exception):
    pass


class _ClientGone(Exception):
    pass


def _refusal(status: int, message: str) -> HttpResponse:
    """A refusal of the HTTP framing (before McpHttpApp). Its JSON keeps json.dumps' default
    spacing and ASCII escapes: the bytes these answers have always had."""
    body = error_reply(status, INVALID_REQUEST, message).body
    return HttpResponse(status, json.dumps(body).encode(), {"content-type": "application/json"})


_INTERNAL_ERROR = error_response(500, INTERNAL_ERROR, "Internal error")


class McpAsgi:
    def __init__(self, app: McpHttpApp, executor: Executor, *, body_timeout: float) -> None:
        self.app = app
        self.executor = executor
        self.body_timeout = body_timeout
        self.max_body = app.services.settings.max_request_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan and websocket are switched off in the server
            return
        raw: list[tuple[bytes, bytes]] = scope["headers"]
        names = [name.lower() for name, _ in raw]
        if names.count(b"host") > 1:
            return await _send(send, _refusal(400, "Bad Request: more than one Host header"), True)
        if b"transfer-encoding" in names and b"content-length" in names:
            msg = "Bad Request: both Content-Length and Transfer-Encoding"
            return await _send(send, _refusal(400, msg), True)
        headers: dict[str, str] = {}
        for name, value in raw:
            key, text = name.decode("latin-1").lower(), value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        length = headers.get("content-length", "0")
        if not (length.isascii() and length.isdigit()):  # h11 checks this too
            return await _send(send, _refusal(400, "Bad Request: invalid Content-Length"), True)
        announced = int(length)
        req = HttpRequest(scope["method"], scope["path"], headers)
        has_body = announced > 0 or "transfer-encoding" in headers
        try:
            early = self.app.preflight(req)
        except Exception:  # as for handle() below: a JSON 500, never the server's own page
            log.exception("unhandled error checking %s %s", req.method, req.path)
            early = _INTERNAL_ERROR
        if early is not None:
            return await _send(send, early, has_body)
        if announced > self.max_body:
            return await _send(send, self._too_large(), True)
        try:
            async with asyncio.timeout(self.body_timeout):
                body = await self._read_body(receive) if has_body else b""
        except TimeoutError:
            msg = f"Request Timeout: the body did not arrive within {self.body_timeout:g} s"
            return await _send(send, _refusal(408, msg), True)
        except _BodyTooLarge:
            return await _send(send, self._too_large(), True)
        except _ClientGone:
            return None
        loop, full = asyncio.get_running_loop(), replace(req, body=body)
        try:
            resp = await loop.run_in_executor(self.executor, self.app.handle, full)
        except Exception:  # the transport maps every error; this is the last line of defence
            log.exception("unhandled error serving %s %s", req.method, req.path)
            resp = _INTERNAL_ERROR
        await _send(send, resp, False)

    async def _read_body(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                raise _BodyTooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _too_large(self) -> HttpResponse:
        return _refusal(413, f"Request body over {self.max_body} bytes")


async def _send(send: Send, resp: HttpResponse, close: bool) -> None:
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in resp.headers.items()]
    headers.append((b"content-length", str(len(resp.body)).encode()))
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": resp.status, "headers": headers})
    await send({"type": "http.response.body", "body": resp.body})
