"""API Gateway HTTP API (payload format 2.0) in front of the one MCP transport.

`memlake serve` and the Lambda behind API Gateway run the same McpHttpApp; this module is the
Lambda door's adapter: event -> HttpRequest, HttpResponse -> API Gateway response, and the JWT
authorizer's claims -> Principal. API Gateway has already verified the token (issuer, audience,
signature, expiry) when the claims reach us; a request without claims gets 401 here too, so a
route left without an authorizer fails closed. See docs/decisions/0401-lambda-tenant-from-jwt.md.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, cast

from memlake.config import Settings
from memlake.context import Principal
from memlake.ids import TENANT_PATTERN
from memlake.lake import Lake
from memlake.mcp.discovery import AuthDiscovery
from memlake.mcp.http import (
    Exchange,
    HttpRequest,
    HttpResponse,
    McpHttpApp,
    OriginPolicy,
    error_response,
)
from memlake.mcp.protocol import INTERNAL_ERROR, INVALID_REQUEST
from memlake.services import Services

log = logging.getLogger("memlake.mcp")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9=_+/-]{1,64}\Z")
_NOT_TENANT_CHARS = re.compile(r"[^a-z0-9_-]+")
SLUG_CHARS = 40
HASH_CHARS = 16
MAX_CLAIM_CHARS = 1024


@dataclass
class ApiGatewayRequest(HttpRequest):
    """An HttpRequest that also carries the JWT authorizer's claims (None: no authorizer) and
    the domain API Gateway served it on (the origin of URLs in auth discovery)."""

    claims: dict[str, Any] | None = None
    domain_name: str | None = None


def tenant_for_claim(value: str) -> str:
    """The tenant for a claim value: the value itself when it is a valid tenant name, else a
    readable slug plus a hash of the exact value (so 'Alice' and 'alice' stay apart)."""
    if TENANT_PATTERN.match(value):
        return value
    slug = _NOT_TENANT_CHARS.sub("-", value.lower()).strip("-_")[:SLUG_CHARS].rstrip("-_")
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]
    return f"{slug or 't'}-{digest}"


def token_id(claims: dict[str, Any]) -> str:
    """A short, non-reversible id of the token for audit: a hash of its jti (else its sub)."""
    raw = claims.get("jti") or claims.get("sub")
    if not isinstance(raw, (str, int)) or raw == "":
        return "jwt"
    return hashlib.sha256(str(raw).encode()).hexdigest()[:12]


def principal_from_claims(claims: dict[str, Any] | None, claim: str) -> Principal | None:
    """The caller from authorizer claims, or None when the tenant claim is missing or empty."""
    if not isinstance(claims, dict):
        return None
    value = claims.get(claim)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value)  # exact: " alice" is not "alice" (it maps to a hashed tenant)
    if not text.strip() or len(text) > MAX_CLAIM_CHARS:
        return None
    return Principal(tenant_for_claim(text), token_id(claims))


def jwt_claims(event: dict[str, Any]) -> dict[str, Any] | None:
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    jwt = authorizer.get("jwt") if isinstance(authorizer, dict) else None
    claims = jwt.get("claims") if isinstance(jwt, dict) else None
    return claims if isinstance(claims, dict) else None


def request_from_event(event: dict[str, Any]) -> ApiGatewayRequest:
    """Payload 2.0 -> HttpRequest. Raises ValueError when a base64 body does not decode."""
    ctx = event.get("requestContext") or {}
    http = ctx.get("http") or {}
    method = str(http.get("method") or event.get("httpMethod") or "GET").upper()
    path = str(event.get("rawPath") or http.get("path") or "/")
    stage = ctx.get("stage")
    if isinstance(stage, str) and stage not in ("", "$default") and path.startswith(f"/{stage}/"):
        path = path[len(stage) + 1 :]
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    raw = event.get("body")
    if raw is None:
        body = b""
    elif event.get("isBase64Encoded"):
        try:
            body = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as e:
            raise ValueError("body is not valid base64") from e
    else:  # a lone surrogate in the text stays invalid UTF-8: a parse error, not a crash
        body = str(raw).encode("utf-8", "surrogatepass")
    rid = ctx.get("requestId")
    request_id = rid if isinstance(rid, str) and _REQUEST_ID.match(rid) else None
    domain = ctx.get("domainName")
    domain_name = domain if isinstance(domain, str) and domain else None
    return ApiGatewayRequest(
        method, path, headers, body, request_id, jwt_claims(event), domain_name
    )


def response_to_event(resp: HttpResponse) -> dict[str, Any]:
    """HttpResponse -> the API Gateway 2.0 response shape (text bodies stay text)."""
    try:
        return {
            "statusCode": resp.status,
            "headers": dict(resp.headers),
            "body": resp.body.decode("utf-8"),
            "isBase64Encoded": False,
        }
    except UnicodeDecodeError:
        return {
            "statusCode": resp.status,
            "headers": dict(resp.headers),
            "body": base64.b64encode(resp.body).decode("ascii"),
            "isBase64Encoded": True,
        }


def internal_error(request_id: str | None) -> HttpResponse:
    """The answer when the transport itself failed (a bug): logged with its traceback."""
    ref = request_id or "-"
    log.exception("unhandled error in the MCP transport (request %s)", ref)
    resp = error_response(500, INTERNAL_ERROR, f"Internal error (reference {ref})")
    if request_id:
        resp.headers["x-request-id"] = request_id
    return resp


class LazyServices:
    """Services built on the first tools/call, not at cold start.

    Building Services loads every feature (search indexing brings faiss, bm25s, tokenizers);
    initialize, ping and tools/list need none of it, so a cold Lambda answers them without
    paying for it. `lake` is a stand-in that builds the real Services on first attribute use;
    anything else is forwarded to the built Services.
    """

    def __init__(self, settings: Settings, build: Callable[[], Services]) -> None:
        self.settings = settings
        self._build = build
        self._built: Services | None = None
        self._lock = threading.Lock()
        self.lake = cast(Lake, _DeferredLake(self))

    @property
    def built(self) -> bool:
        return self._built is not None

    def get(self) -> Services:
        if self._built is None:
            with self._lock:
                if self._built is None:
                    self._built = self._build()
        return self._built

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


class _DeferredLake:
    def __init__(self, owner: LazyServices) -> None:
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.get().lake, name)


class ApiGatewayMcp:
    """The MCP endpoint as an API Gateway handler: one McpHttpApp per process (warm reuse)."""

    def __init__(self, services: Services | LazyServices) -> None:
        self.services = services
        cfg = services.settings
        self.claim, self.local_tenant = cfg.tenant_claim, cfg.sam_local_tenant
        origins = OriginPolicy(cfg.allowed_origins, allowed_hosts=None)
        # auth is always on behind API Gateway: the JWT issuer is the authorization server
        discovery = AuthDiscovery(cfg.authorization_servers, cfg.public_url, scheme="https")
        self.app = McpHttpApp(
            cast(Services, services),
            lambda req: self._principal(req, self.claim, self.local_tenant),
            origins,
            discovery=discovery,
        )

    @staticmethod
    def _principal(req: HttpRequest, claim: str, local_tenant: str) -> Principal | None:
        claims = getattr(req, "claims", None)
        if claims is None and local_tenant:  # sam local: no authorizer (Settings.sam_local_tenant)
            return Principal(tenant_for_claim(local_tenant), "sam-local")
        return principal_from_claims(claims, claim)

    def handle(self, event: dict[str, Any]) -> Exchange:
        """Never raises: an event it cannot read is a 400, a failure of ours a JSON-RPC
        internal error (500) with a reference; both are logged, the second with a traceback."""
        try:
            req = request_from_event(event)
        except ValueError:
            return Exchange(error_response(400, INVALID_REQUEST, "Body is not valid base64"))
        except Exception:  # not the shape API Gateway sends
            log.warning("unreadable API Gateway event", exc_info=True)
            return Exchange(error_response(400, INVALID_REQUEST, "Malformed API Gateway event"))
        try:
            exchange = self.app.exchange(req)
        except Exception:
            exchange = Exchange(internal_error(req.request_id))
        if exchange.principal is None:  # refused before authentication: the logs still say who
            who = self._principal(req, self.claim, self.local_tenant)
            exchange = replace(exchange, principal=who)
        return exchange

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        return response_to_event(self.handle(event).response)
