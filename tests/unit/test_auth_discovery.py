"""Auth discovery (RFC 9728 protected resource metadata, the 401 challenge) and /health on
McpHttpApp, for both doors: `memlake serve`'s app and the API Gateway adapter."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import AnyHttpUrl, BaseModel, ConfigDict, field_validator

from memlake.config import Settings
from memlake.errors import ConfigurationError
from memlake.mcp.apigw import ApiGatewayMcp
from memlake.mcp.http import HttpRequest, HttpResponse, McpHttpApp
from memlake.mcp.server import build_app
from memlake.services import Services
from memlake.store.local import LocalStore

TOKEN = "tok-discovery"
ISSUER = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf"
WELL_KNOWN = "/.well-known/oauth-protected-resource"
HOST = "127.0.0.1:8080"


class ProtectedResourceMetadata(BaseModel):
    """RFC 9728 section 2: `resource` is REQUIRED; the rest OPTIONAL/RECOMMENDED with these
    types. Unknown members are allowed (section 2: clients ignore them)."""

    model_config = ConfigDict(extra="allow", strict=True)

    resource: AnyHttpUrl
    authorization_servers: list[AnyHttpUrl] | None = None
    jwks_uri: AnyHttpUrl | None = None
    scopes_supported: list[str] | None = None
    bearer_methods_supported: list[Literal["header", "body", "query"]] | None = None
    resource_signing_alg_values_supported: list[str] | None = None
    resource_name: str | None = None
    resource_documentation: AnyHttpUrl | None = None
    resource_policy_uri: AnyHttpUrl | None = None
    resource_tos_uri: AnyHttpUrl | None = None
    tls_client_certificate_bound_access_tokens: bool | None = None
    authorization_details_types_supported: list[str] | None = None
    dpop_signing_alg_values_supported: list[str] | None = None
    dpop_bound_access_tokens_required: bool | None = None

    @field_validator("resource")
    @classmethod
    def _no_fragment(cls, value: AnyHttpUrl) -> AnyHttpUrl:
        assert value.fragment is None, "resource must not have a fragment (RFC 9728 section 1.2)"
        return value


def challenge_params(header: str) -> dict[str, str]:
    """auth-params of a `Bearer` challenge (RFC 9110 section 11.2, quoted-string values)."""
    scheme, _, rest = header.partition(" ")
    assert scheme == "Bearer", header
    pairs = re.findall(r'([A-Za-z_]+)="((?:[^"\\]|\\.)*)"\s*(?:,\s*|$)', rest)
    assert ", ".join(f'{k}="{v}"' for k, v in pairs) == rest.strip(), header
    return dict(pairs)


def _app(tmp_path: Path, **settings: Any) -> McpHttpApp:
    cfg = Settings(data_dir=tmp_path, **settings)
    return build_app(Services.build(cfg, LocalStore(tmp_path)), host="127.0.0.1")


@pytest.fixture
def keyed(tmp_path: Path) -> McpHttpApp:
    return _app(tmp_path, api_keys=(f"{TOKEN}:alpha",))


def get(app: McpHttpApp, path: str, host: str = HOST, **headers: str) -> HttpResponse:
    return app.handle(HttpRequest("GET", path, {"host": host, **headers}))


def post_ping(app: McpHttpApp, **headers: str) -> HttpResponse:
    hdrs = {"host": HOST, "content-type": "application/json", "accept": "application/json"}
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    return app.handle(HttpRequest("POST", "/mcp", {**hdrs, **headers}, body))


@pytest.mark.parametrize("path", [WELL_KNOWN + "/mcp", WELL_KNOWN, WELL_KNOWN + "/mcp/"])
def test_keyed_server_publishes_rfc9728_metadata(keyed: McpHttpApp, path: str) -> None:
    # WHEN a client without a token reads the metadata (both well-known forms)
    resp = get(keyed, path)
    # THEN it is RFC 9728 metadata of the MCP endpoint, tokens in the header, no fake issuer
    assert resp.status == 200 and resp.headers["content-type"] == "application/json"
    doc = ProtectedResourceMetadata.model_validate(resp.json())
    assert str(doc.resource) == f"http://{HOST}/mcp"
    assert doc.bearer_methods_supported == ["header"]
    assert "authorization_servers" not in resp.json()  # static keys: none to name (1131)
    assert resp.headers["access-control-allow-origin"] == "*"
    assert resp.headers["vary"] == "host"  # resource comes from Host: a shared cache keys on it


def test_metadata_names_the_configured_authorization_servers(tmp_path: Path) -> None:
    app = _app(
        tmp_path,
        api_keys=(f"{TOKEN}:alpha",),
        authorization_servers=(ISSUER, "https://login.example.com"),
        public_url="https://memlake.example.com",
    )
    doc = get(app, WELL_KNOWN + "/mcp").json()
    ProtectedResourceMetadata.model_validate(doc)
    assert doc["resource"] == "https://memlake.example.com/mcp"  # the public URL, not Host
    assert doc["authorization_servers"] == [ISSUER, "https://login.example.com"]
    assert "vary" not in get(app, WELL_KNOWN + "/mcp").headers  # the same for every Host


def test_401_points_to_the_metadata(keyed: McpHttpApp) -> None:
    # WHEN /mcp is called without a token
    resp = post_ping(keyed)
    # THEN the challenge names the metadata document, and no error code (RFC 6750 3.1)
    assert resp.status == 401
    params = challenge_params(resp.headers["www-authenticate"])
    assert params == {
        "realm": "memlake",
        "resource_metadata": f"http://{HOST}{WELL_KNOWN}/mcp",
    }
    # AND that URL's path answers the document
    assert get(keyed, WELL_KNOWN + "/mcp").status == 200


def test_401_for_a_wrong_token_says_invalid_token(keyed: McpHttpApp) -> None:
    resp = post_ping(keyed, authorization="Bearer not-the-key")
    params = challenge_params(resp.headers["www-authenticate"])
    assert params["error"] == "invalid_token"
    assert params["resource_metadata"].endswith(WELL_KNOWN + "/mcp")
    assert "not valid" in resp.json()["error"]["message"]
    assert post_ping(keyed, authorization=f"Bearer {TOKEN}").status == 200  # keys still work


def test_metadata_urls_never_take_a_host_the_check_refused(keyed: McpHttpApp) -> None:
    # a DNS-rebinding Host is refused before any URL is built from it
    assert get(keyed, WELL_KNOWN + "/mcp", host="evil.example").status == 403
    assert post_ping(keyed, host="evil.example").status == 403


def test_static_key_server_tells_oauth_clients_to_send_the_key(keyed: McpHttpApp) -> None:
    # an OAuth client finding no authorization server tries the resource's own origin
    for path in ("/register", "/.well-known/oauth-authorization-server", "/token"):
        resp = keyed.handle(HttpRequest("POST", path, {"host": HOST}))
        assert resp.status == 404
        assert b"Authorization: Bearer <key>" in resp.body
    assert get(keyed, "/elsewhere").body == b"not found"


def test_without_keys_there_is_no_metadata_but_health(tmp_path: Path) -> None:
    app = _app(tmp_path)
    assert get(app, WELL_KNOWN + "/mcp").status == 404
    assert get(app, WELL_KNOWN).status == 404
    health = get(app, "/health")
    assert health.status == 200 and health.json()["status"] == "ok"


def test_health_needs_no_token_and_says_nothing_of_tenants(keyed: McpHttpApp) -> None:
    resp = get(keyed, "/health")
    assert resp.status == 200
    assert set(resp.json()) == {"status", "version"}
    assert resp.headers["cache-control"] == "no-store"
    assert keyed.preflight(HttpRequest("GET", "/health", {"host": HOST})) is not None  # no body
    assert keyed.handle(HttpRequest("POST", "/health", {"host": HOST})).status == 405


def _event(path: str, method: str = "GET", **extra: Any) -> dict[str, Any]:
    return {
        "version": "2.0",
        "rawPath": path,
        "headers": {"host": "abc123.execute-api.eu-west-1.amazonaws.com", **extra},
        "requestContext": {
            "http": {"method": method, "path": path},
            "domainName": "abc123.execute-api.eu-west-1.amazonaws.com",
            "stage": "$default",
            "requestId": "req-1",
        },
    }


def test_lambda_door_serves_metadata_naming_the_jwt_issuer(tmp_path: Path) -> None:
    # GIVEN the Lambda door as template.yaml configures it (issuer = JwtIssuer)
    cfg = Settings(data_dir=tmp_path, authorization_servers=(ISSUER,))
    door = ApiGatewayMcp(Services.build(cfg, LocalStore(tmp_path)))
    # WHEN the public route is called (API Gateway passes no claims: no authorizer on it)
    out = door(_event(WELL_KNOWN + "/mcp"))
    # THEN the metadata names the API's https URL and the issuer
    assert out["statusCode"] == 200
    doc = ProtectedResourceMetadata.model_validate(json.loads(out["body"])).model_dump(
        mode="json", exclude_none=True
    )
    assert doc["resource"] == "https://abc123.execute-api.eu-west-1.amazonaws.com/mcp"
    assert doc["authorization_servers"] == [ISSUER]
    # AND a POST /mcp that reached the function without claims gets the same challenge
    post = door({**_event("/mcp", "POST", **{"content-type": "application/json"}), "body": "{}"})
    params = challenge_params(post["headers"]["www-authenticate"])
    assert params["resource_metadata"] == (
        "https://abc123.execute-api.eu-west-1.amazonaws.com" + WELL_KNOWN + "/mcp"
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MEMLAKE_AUTHORIZATION_SERVERS", "http://login.example.com"),  # not https
        ("MEMLAKE_AUTHORIZATION_SERVERS", "https://login.example.com?x=1"),
        ("MEMLAKE_AUTHORIZATION_SERVERS", 'https://a.example.com/"x'),
        ("MEMLAKE_AUTHORIZATION_SERVERS", "login.example.com"),
        ("MEMLAKE_PUBLIC_URL", "https://memlake.example.com/prefix"),
        ("MEMLAKE_PUBLIC_URL", "ftp://memlake.example.com"),
        ("MEMLAKE_PUBLIC_URL", "https://memlake.example.com:99999"),
    ],
)
def test_bad_discovery_settings_are_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=name):
        Settings.from_env()


def test_discovery_settings_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLAKE_AUTHORIZATION_SERVERS", f"{ISSUER}/, http://localhost:9000")
    monkeypatch.setenv("MEMLAKE_PUBLIC_URL", "https://memlake.example.com/")
    cfg = Settings.from_env()
    assert cfg.authorization_servers == (ISSUER, "http://localhost:9000")
    assert cfg.public_url == "https://memlake.example.com"
