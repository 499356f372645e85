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

from memlake.context import Principal
from memlake.jsonshape import escaped
from memlake.mcp.browser import HEADERS, is_ui_path, ui_file
from memlake.mcp.discovery import HEALTH_PATH, REALM, AuthDiscovery, health, metadata_paths
from memlake.mcp.dispatch import SERVER_INFO
from memlake.mcp.protocol import INVALID_REQUEST
from memlake.mcp.rpc import Reply, answer, error_reply
from memlake.mcp.wire import BadMessage, dumps, parse_body
from memlake.services import Services

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
class Exchange:
    """A request's response and what the logs may say about it: the JSON-RPC method and tool
    it named ("-": none readable; escaped and cut), whether the tool failed, and the caller
    (None: not authenticated, or refused before authentication). Names only, never arguments."""

    response: HttpResponse
    method: str = "-"
    tool: str = "-"
    tool_error: bool = False
    principal: Principal | None = None


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
_JSON = {"content-type": "application/json"}


def http_response(reply: Reply) -> HttpResponse:
    """A JSON-RPC answer as HTTP: compact JSON, x-request-id on a result (202: no body)."""
    if reply.body is None:
        return HttpResponse(reply.status)
    headers = dict(_JSON)
    if reply.ok:
        headers["x-request-id"] = reply.request_id
    return HttpResponse(reply.status, dumps(reply.body), headers)


def error_response(
    status: int, code: int, message: str, msg_id: Any = None, data: Any = None
) -> HttpResponse:
    return http_response(error_reply(status, code, message, msg_id, data))


def _method_not_allowed(allowed: str) -> HttpResponse:
    resp = error_response(405, INVALID_REQUEST, f"Method not allowed: use {allowed}")
    resp.headers["allow"] = allowed
    return resp


class McpHttpApp:
    def __init__(
        self,
        services: Services,
        authenticate: Authenticator,
        origins: OriginPolicy | None = None,
        path: str = "/mcp",
        discovery: AuthDiscovery | None = None,
        ui: bool = False,
    ) -> None:
        self.services = services
        #: serve the memory browser's files at /ui (memlake.mcp.browser)
        self.ui = ui
        self.authenticate = authenticate
        self.origins = origins or OriginPolicy()
        self.path = path
        #: how a 401 and the well-known document describe the auth (None: auth is off)
        self.discovery = discovery

    def _check_headers(self, req: HttpRequest) -> HttpResponse | Principal:
        if req.path.rstrip("/") != self.path:
            hint = self.discovery.not_found_text(req.path) if self.discovery else None
            text = (hint or "not found").encode()
            return self._public(req) or HttpResponse(404, text, {"content-type": "text/plain"})
        if not self.origins.host_ok(req.header("host")):
            return error_response(403, INVALID_REQUEST, "Forbidden: Host header not allowed")
        if not self.origins.origin_ok(req.header("origin")) and not self._from_ui(req):
            return error_response(403, INVALID_REQUEST, "Forbidden: Origin not allowed")
        if req.method != "POST":
            return _method_not_allowed("POST")
        principal = self.authenticate(req)
        if principal is None:
            return self._unauthorized(req)
        ctype = (req.header("content-type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            return error_response(415, INVALID_REQUEST, "Content-Type must be application/json")
        accept = (req.header("accept") or "*/*").lower()
        if not any(a in accept for a in ("application/json", "*/*", "application/*")):
            return error_response(406, INVALID_REQUEST, "Accept must include application/json")
        return principal

    def _public(self, req: HttpRequest) -> HttpResponse | None:
        """GET /health, and with auth on the protected resource metadata: no token needed."""
        path = req.path.rstrip("/")
        if self.ui and is_ui_path(path or req.path):
            return self._ui(req)
        metadata = self.discovery is not None and path in metadata_paths(self.path)
        if path != HEALTH_PATH and not metadata:
            return None
        if not self.origins.host_ok(req.header("host")):
            return error_response(403, INVALID_REQUEST, "Forbidden: Host header not allowed")
        if req.method != "GET":
            return _method_not_allowed("GET")
        if self.discovery is None or not metadata:
            body = health(str(SERVER_INFO["version"]))
            return HttpResponse(200, dumps(body), {**_JSON, "cache-control": "no-store"})
        base = self._base_url(req)
        if base is None:
            return error_response(400, INVALID_REQUEST, "Bad Request: no usable Host header")
        doc = self.discovery.document(base, self.path)
        # public and the same for every caller: any origin may read it, caches may keep it
        cors = {"access-control-allow-origin": "*", "cache-control": "public, max-age=3600"}
        if not self.discovery.public_url:  # `resource` names the Host: a cache must key on it
            cors["vary"] = "host"
        return HttpResponse(200, dumps(doc), {**_JSON, **cors})

    def _from_ui(self, req: HttpRequest) -> bool:
        """A same-origin call (the page at /ui of this server: Origin is scheme://Host). The
        Host check above already refused a rebinding attacker's name on a loopback server;
        elsewhere the tab still needs a token the attacker's origin never had."""
        origin, host = req.header("origin"), req.header("host")
        if not self.ui or not origin or not host:
            return False
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower()

    def _ui(self, req: HttpRequest) -> HttpResponse:
        if not self.origins.host_ok(req.header("host")):
            return error_response(403, INVALID_REQUEST, "Forbidden: Host header not allowed")
        if req.method not in ("GET", "HEAD"):
            return _method_not_allowed("GET")
        found = ui_file(req.path)
        if found is None:
            return HttpResponse(404, b"not found", {"content-type": "text/plain", **HEADERS})
        body, headers = found
        return HttpResponse(200, body if req.method == "GET" else b"", headers)

    def _base_url(self, req: HttpRequest) -> str | None:
        """scheme://host of this endpoint as clients reach it (for the 401 and the document)."""
        assert self.discovery is not None
        host = getattr(req, "domain_name", None) or req.header("host")
        usable = host is not None and _HOST.fullmatch(host) and self.origins.host_ok(host)
        return self.discovery.base_url(host if usable else None)

    def _unauthorized(self, req: HttpRequest) -> HttpResponse:
        token_sent = bool((req.header("authorization") or "").strip())
        message = (
            "Unauthorized: the bearer token is not valid"
            if token_sent
            else "Unauthorized: send 'Authorization: Bearer <token>'"
        )
        resp = error_response(401, INVALID_REQUEST, message)
        resp.headers["www-authenticate"] = (
            f'Bearer realm="{REALM}"'
            if self.discovery is None
            else self.discovery.challenge(self._base_url(req), self.path, token_sent=token_sent)
        )
        return resp

    def preflight(self, req: HttpRequest) -> HttpResponse | None:
        """The checks that need only the request line and headers (path, Host, Origin, method,
        credentials, content type): the rejection, or None when the body is worth reading.

        A server calls this before it reads a body, so an unauthenticated client cannot make
        it buffer one; handle() runs the same checks itself.
        """
        checked = self._check_headers(req)
        return checked if isinstance(checked, HttpResponse) else None

    def handle(self, req: HttpRequest) -> HttpResponse:
        return self.exchange(req).response

    def exchange(self, req: HttpRequest) -> Exchange:
        """handle() plus what the logs need, from the one parse of the body."""
        checked = self._check_headers(req)
        if isinstance(checked, HttpResponse):
            return Exchange(checked)
        principal = checked
        if len(req.body) > self.services.settings.max_request_bytes:
            limit = self.services.settings.max_request_bytes
            resp = error_response(413, INVALID_REQUEST, f"Request body over {limit} bytes")
            return Exchange(resp, principal=principal)
        try:
            message = parse_body(req.body)
        except BadMessage as e:
            return Exchange(error_response(400, e.code, e.message), principal=principal)
        reply = answer(
            message, self.services, principal, header=req.header, request_id=req.request_id
        )
        return Exchange(
            http_response(reply),
            escaped(reply.method, 64) if reply.method is not None else "-",
            escaped(reply.tool, 64) if reply.tool is not None else "-",
            reply.tool_error,
            principal,
        )
