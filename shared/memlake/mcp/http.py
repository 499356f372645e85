"""The Streamable HTTP transport as a pure function: HttpRequest -> HttpResponse.

Both doors use it: `memlake serve` (a local HTTP server) and the Lambda handler behind API
Gateway. Stateless and JSON-only: POST /mcp carries one JSON-RPC message; GET and DELETE get
405 (no SSE stream, no sessions). Requests at revision 2026-07-28 carry the `_meta` envelope
and the Mcp-Method / Mcp-Name headers, which must match the body; older revisions use the
initialize handshake. See docs/mcp-protocol-notes.md.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from memlake.mcp.discovery import HEALTH_PATH, REALM, AuthDiscovery, health, metadata_paths
from memlake.mcp.dispatch import SERVER_INFO, dispatch
from memlake.mcp.protocol import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LEGACY_TOLERATED,
    META_CAPABILITIES,
    META_SERVER_INFO,
    META_VERSION,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    UNSUPPORTED_VERSION,
    RpcError,
)
from memlake.mcp.wire import BadMessage, check_params, classify, dumps, parse_body
from memlake.services import Services
from memlake.tools.base import Principal, ToolContext

log = logging.getLogger("memlake.mcp")
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")
_B64_WORD = re.compile(r"^=\?base64\?([A-Za-z0-9+/=]*)\?=$")
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
_JSON = {"content-type": "application/json"}


def _error_response(
    status: int, code: int, message: str, msg_id: Any = None, data: Any = None
) -> HttpResponse:
    err = RpcError(code, message, data).to_json()
    body = {"jsonrpc": "2.0", "id": msg_id, "error": err}
    return HttpResponse(status, dumps(body), {"content-type": "application/json"})


def _decode_header_value(value: str) -> str | None:
    match = _B64_WORD.match(value)
    if not match:
        return value
    try:
        return base64.b64decode(match.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


class McpHttpApp:
    def __init__(
        self,
        services: Services,
        authenticate: Authenticator,
        origins: OriginPolicy | None = None,
        path: str = "/mcp",
        discovery: AuthDiscovery | None = None,
    ) -> None:
        self.services = services
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
            return _error_response(403, INVALID_REQUEST, "Forbidden: Host header not allowed")
        if not self.origins.origin_ok(req.header("origin")):
            return _error_response(403, INVALID_REQUEST, "Forbidden: Origin not allowed")
        if req.method != "POST":
            resp = _error_response(405, INVALID_REQUEST, "Method not allowed: use POST")
            resp.headers["allow"] = "POST"
            return resp
        principal = self.authenticate(req)
        if principal is None:
            return self._unauthorized(req)
        ctype = (req.header("content-type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            return _error_response(415, INVALID_REQUEST, "Content-Type must be application/json")
        accept = (req.header("accept") or "*/*").lower()
        if not any(a in accept for a in ("application/json", "*/*", "application/*")):
            return _error_response(406, INVALID_REQUEST, "Accept must include application/json")
        return principal

    def _public(self, req: HttpRequest) -> HttpResponse | None:
        """GET /health, and with auth on the protected resource metadata: no token needed."""
        path = req.path.rstrip("/")
        metadata = self.discovery is not None and path in metadata_paths(self.path)
        if path != HEALTH_PATH and not metadata:
            return None
        if not self.origins.host_ok(req.header("host")):
            return _error_response(403, INVALID_REQUEST, "Forbidden: Host header not allowed")
        if req.method != "GET":
            resp = _error_response(405, INVALID_REQUEST, "Method not allowed: use GET")
            resp.headers["allow"] = "GET"
            return resp
        if self.discovery is None or not metadata:
            body = health(str(SERVER_INFO["version"]))
            return HttpResponse(200, dumps(body), {**_JSON, "cache-control": "no-store"})
        base = self._base_url(req)
        if base is None:
            return _error_response(400, INVALID_REQUEST, "Bad Request: no usable Host header")
        doc = self.discovery.document(base, self.path)
        # public and the same for every caller: any origin may read it, caches may keep it
        cors = {"access-control-allow-origin": "*", "cache-control": "public, max-age=3600"}
        return HttpResponse(200, dumps(doc), {**_JSON, **cors})

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
        resp = _error_response(401, INVALID_REQUEST, message)
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
        if isinstance(message, list):
            return _error_response(400, INVALID_REQUEST, "Batches are not supported")
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _error_response(400, INVALID_REQUEST, "Invalid Request: not JSON-RPC 2.0")
        try:
            kind = classify(message)
        except BadMessage as e:
            return _error_response(400, e.code, e.message, e.msg_id)
        msg_id = message.get("id")
        header_version = req.header("mcp-protocol-version")
        if header_version is not None and header_version not in (
            *SUPPORTED_VERSIONS,
            *LEGACY_TOLERATED,
        ):
            return _error_response(
                400,
                UNSUPPORTED_VERSION,
                f"Unsupported protocol version: {header_version[:40]}",
                msg_id,
                {"supported": list(SUPPORTED_VERSIONS), "requested": header_version[:40]},
            )
        if kind != "request":  # a notification, or a response to nothing we asked
            return HttpResponse(202)
        method: str = message["method"]
        params = message.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _error_response(400, INVALID_PARAMS, "params must be an object", msg_id)
        try:
            check_params(method, params, msg_id)
        except BadMessage as e:
            return _error_response(400, e.code, e.message, e.msg_id)
        request_id = req.request_id or uuid.uuid4().hex[:16]
        try:
            modern = self._check_era(req, method, params, header_version)
            started = time.perf_counter()
            ctx = ToolContext(
                principal=principal,
                lake=self.services.lake,
                settings=self.services.settings,
                request_id=request_id,
                services=self.services,
            )
            result = dispatch(
                method,
                params,
                modern=modern,
                ctx=ctx,
                page_size=self.services.settings.tools_page_size,
            )
            log.info(
                "rpc %s tool=%s tenant=%s ms=%.1f",
                method,
                params.get("name") if method == "tools/call" else "-",
                principal.tenant,
                (time.perf_counter() - started) * 1000,
                extra={"correlation_id": request_id},
            )
        except RpcError as e:
            return _error_response(e.http_status, e.code, e.message, msg_id, e.data)
        if modern:
            result = {
                **result,
                "resultType": "complete",
                "_meta": {META_SERVER_INFO: SERVER_INFO},
            }
            if method == "tools/list":
                result.setdefault("ttlMs", 0)
                result.setdefault("cacheScope", "private")
        body = {"jsonrpc": "2.0", "id": msg_id, "result": result}
        return HttpResponse(
            200, dumps(body), {"content-type": "application/json", "x-request-id": request_id}
        )

    def _check_era(
        self, req: HttpRequest, method: str, params: dict[str, Any], header_version: str | None
    ) -> bool:
        meta = params.get("_meta")
        meta_version = meta.get(META_VERSION) if isinstance(meta, dict) else None
        modern = header_version in MODERN_VERSIONS or meta_version in MODERN_VERSIONS
        if method == "server/discover" and header_version is None and meta_version is None:
            return True
        if not modern:
            return False
        if not isinstance(meta, dict) or not isinstance(meta.get(META_CAPABILITIES), dict):
            raise RpcError(
                INVALID_PARAMS,
                f"params._meta must carry {META_VERSION} and {META_CAPABILITIES}",
            )
        if not isinstance(meta_version, str):
            raise RpcError(INVALID_PARAMS, f"params._meta needs {META_VERSION}")
        if header_version != meta_version:
            raise RpcError(
                HEADER_MISMATCH,
                f"Header mismatch: MCP-Protocol-Version {header_version!r} does not match"
                f" _meta protocolVersion {meta_version!r}",
            )
        if meta_version not in MODERN_VERSIONS:
            raise RpcError(
                UNSUPPORTED_VERSION,
                f"Unsupported protocol version: {meta_version[:40]}",
                {"supported": list(SUPPORTED_VERSIONS), "requested": meta_version[:40]},
            )
        header_method = req.header("mcp-method")
        if header_method != method:
            raise RpcError(
                HEADER_MISMATCH,
                f"Header mismatch: Mcp-Method {header_method!r} does not match method {method!r}",
            )
        if method == "tools/call" and isinstance(params.get("name"), str):
            raw = req.header("mcp-name")
            decoded = _decode_header_value(raw) if raw is not None else None
            if decoded != params["name"]:
                raise RpcError(
                    HEADER_MISMATCH,
                    f"Header mismatch: Mcp-Name {raw!r} does not match params.name",
                )
        return True
