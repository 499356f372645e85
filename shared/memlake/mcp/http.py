"""The Streamable HTTP transport as a pure function: HttpRequest -> HttpResponse.

Both doors use it: `memlake serve` (a local HTTP server) and the Lambda handler behind API
Gateway. Stateless and JSON-only: POST /mcp carries one JSON-RPC message; GET and DELETE get
405 (no SSE stream, no sessions). Requests at revision 2026-07-28 carry the `_meta` envelope
and the Mcp-Method / Mcp-Name headers, which must match the body; older revisions use the
initialize handshake. See docs/mcp-protocol-notes.md.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from memlake.mcp.protocol import INVALID_REQUEST, RpcError
from memlake.mcp.rpc import answer
from memlake.mcp.wire import BadMessage, dumps, parse_body
from memlake.services import Services
from memlake.tools.base import Principal

log = logging.getLogger("memlake.mcp")
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::[0-9]{1,5})?")


@dataclass
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    body: bytes = b""
    #: id for logs, x-request-id and error references (API Gateway's); generated when None
    request_id: str | None = None

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class HttpResponse:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True)
class OriginPolicy:
    """Which browser origins may call, and (for a loopback server) which Host names are ours."""

    allowed_origins: tuple[str, ...] = ()
    allow_loopback_origins: bool = True
    allowed_hosts: tuple[str, ...] | None = None  # None: do not check Host (behind API Gateway)

    def origin_ok(self, origin: str | None) -> bool:
        if origin is None:
            return True
        if origin in self.allowed_origins or "*" in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        host = (parts.hostname or "").lower()
        return (
            self.allow_loopback_origins
            and parts.scheme in ("http", "https")
            and host in ("localhost", "127.0.0.1", "::1")
        )

    def host_ok(self, host: str | None) -> bool:
        if self.allowed_hosts is None:
            return True
        match = _HOST.fullmatch(host or "")  # one host[:port]: no lists, no joined duplicates
        return match is not None and match.group(1).lower() in self.allowed_hosts


Authenticator = Callable[[HttpRequest], Principal | None]


def _error_response(
    status: int, code: int, message: str, msg_id: Any = None, data: Any = None
) -> HttpResponse:
    err = RpcError(code, message, data).to_json()
    body = {"jsonrpc": "2.0", "id": msg_id, "error": err}
    return HttpResponse(status, dumps(body), {"content-type": "application/json"})


class McpHttpApp:
    def __init__(
        self,
        services: Services,
        authenticate: Authenticator,
        origins: OriginPolicy | None = None,
        path: str = "/mcp",
    ) -> None:
        self.services = services
        self.authenticate = authenticate
        self.origins = origins or OriginPolicy()
        self.path = path

    def _check_headers(self, req: HttpRequest) -> HttpResponse | Principal:
        if req.path.rstrip("/") != self.path:
            return HttpResponse(404, b"not found", {"content-type": "text/plain"})
        if not self.origins.host_ok(req.header("host")):
            return _error_response(403, INVALID_REQUEST, "Forbidden: Host header not allowed")
        if not self.origins.origin_ok(req.header("origin")):
            return _error_response(403, INVALID_REQUEST, "Forbidden: Origin not allowed")
        if req.method != "POST":
            resp = _error_response(405, INVALID_REQUEST, "Method not allowed: use POST")
            resp.headers["allow"] = "POST"
            return resp
        principal = self.authenticate(req)
        if principal is None:
            resp = _error_response(
                401, INVALID_REQUEST, "Unauthorized: send 'Authorization: Bearer <token>'"
            )
            resp.headers["www-authenticate"] = 'Bearer realm="memlake"'
            return resp
        ctype = (req.header("content-type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            return _error_response(415, INVALID_REQUEST, "Content-Type must be application/json")
        accept = (req.header("accept") or "*/*").lower()
        if not any(a in accept for a in ("application/json", "*/*", "application/*")):
            return _error_response(406, INVALID_REQUEST, "Accept must include application/json")
        return principal

    def preflight(self, req: HttpRequest) -> HttpResponse | None:
        """The checks that need only the request line and headers (path, Host, Origin, method,
        credentials, content type): the rejection, or None when the body is worth reading.

        A server calls this before it reads a body, so an unauthenticated client cannot make
        it buffer one; handle() runs the same checks itself.
        """
        checked = self._check_headers(req)
        return checked if isinstance(checked, HttpResponse) else None

    def handle(self, req: HttpRequest) -> HttpResponse:
        checked = self._check_headers(req)
        if isinstance(checked, HttpResponse):
            return checked
        principal = checked
        if len(req.body) > self.services.settings.max_request_bytes:
            limit = self.services.settings.max_request_bytes
            return _error_response(413, INVALID_REQUEST, f"Request body over {limit} bytes")
        try:
            message = parse_body(req.body)
        except BadMessage as e:
            return _error_response(400, e.code, e.message)
        return self._message(req, message, principal)

    def _message(self, req: HttpRequest, message: Any, principal: Principal) -> HttpResponse:
        reply = answer(
            message, self.services, principal, header=req.header, request_id=req.request_id
        )
        if reply.body is None:
            return HttpResponse(reply.status)
        headers = {"content-type": "application/json"}
        if reply.ok:
            headers["x-request-id"] = reply.request_id
        return HttpResponse(reply.status, dumps(reply.body), headers)
