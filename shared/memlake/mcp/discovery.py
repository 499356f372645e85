"""What a remote client may read without a token: OAuth protected resource metadata and /health.

When the endpoint requires a bearer token, it describes itself as an OAuth 2.0 protected
resource (RFC 9728), as the MCP authorization spec asks:

- `GET /.well-known/oauth-protected-resource/mcp` (the well-known path inserted before the
  endpoint's path, RFC 9728 section 3.1) and `GET /.well-known/oauth-protected-resource` (the
  root form MCP clients fall back to) answer the metadata document: `resource` is the MCP
  endpoint's URL, `authorization_servers` the configured issuers, bearer tokens go in the
  Authorization header;
- a 401 names that document: `WWW-Authenticate: Bearer realm="memlake",
  resource_metadata="<its URL>"` (RFC 9728 section 5.1), plus `error="invalid_token"` when a
  token was sent but not accepted (RFC 6750 section 3.1: none when no token came).

With static API keys and no authorization server the document leaves `authorization_servers`
out; docs/decisions/1131-auth-discovery.md says why. URLs use MEMLAKE_PUBLIC_URL, else the
request's host, and only one the transport's Host check accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WELL_KNOWN = "/.well-known/oauth-protected-resource"
HEALTH_PATH = "/health"
REALM = "memlake"
#: where an OAuth client looks for an authorization server on the resource's own origin when
#: the metadata names none (the MCP spec's fallback for servers of revision 2025-03-26)
_AS_GUESSES = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")
_AS_ENDPOINTS = ("/register", "/authorize", "/token")
STATIC_KEYS_HINT = (
    "Not found: memlake has no OAuth authorization server here; it takes a static API key."
    " Send the header 'Authorization: Bearer <key>' (mcp-remote: --header; Inspector: --header)"
)


@dataclass(frozen=True)
class AuthDiscovery:
    """How the endpoint advertises its authorization (present only when auth is on)."""

    authorization_servers: tuple[str, ...] = ()
    #: scheme://host[:port] clients use; "" = `scheme` plus the request's host
    public_url: str = ""
    scheme: str = "http"

    def base_url(self, host: str | None) -> str | None:
        """The endpoint's origin; None when it is not configured and the host is unusable."""
        if self.public_url:
            return self.public_url
        return f"{self.scheme}://{host.lower()}" if host else None

    def document(self, base: str, mcp_path: str) -> dict[str, Any]:
        """The RFC 9728 metadata of the MCP endpoint at `base + mcp_path`."""
        doc: dict[str, Any] = {"resource": base + mcp_path}
        if self.authorization_servers:
            doc["authorization_servers"] = list(self.authorization_servers)
        doc["bearer_methods_supported"] = ["header"]
        doc["resource_name"] = "memlake"
        return doc

    def not_found_text(self, path: str) -> str | None:
        """For a static-key server, the 404 an OAuth client gets where it looks for an
        authorization server: it says to send the key instead (the client shows this text)."""
        if self.authorization_servers:
            return None
        if path in _AS_ENDPOINTS or any(path.startswith(g) for g in _AS_GUESSES):
            return STATIC_KEYS_HINT
        return None

    def challenge(self, base: str | None, mcp_path: str, *, token_sent: bool) -> str:
        """The WWW-Authenticate value of a 401."""
        params = [f'realm="{REALM}"']
        if base is not None:
            params.append(f'resource_metadata="{metadata_url(base, mcp_path)}"')
        if token_sent:
            params.append('error="invalid_token"')
            params.append('error_description="The bearer token is not valid"')
        return "Bearer " + ", ".join(params)


def metadata_url(base: str, mcp_path: str) -> str:
    """Where the metadata of the resource `base + mcp_path` lives (RFC 9728 section 3.1)."""
    return base + WELL_KNOWN + mcp_path


def metadata_paths(mcp_path: str) -> tuple[str, str]:
    return (WELL_KNOWN + mcp_path, WELL_KNOWN)


def health(version: str) -> dict[str, str]:
    """Liveness of the process: no tenant, no store access, nothing a caller could probe."""
    return {"status": "ok", "version": version}
