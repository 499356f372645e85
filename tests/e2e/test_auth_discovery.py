"""Auth discovery against `memlake serve` with API keys: raw HTTP and the MCP Inspector CLI.

A client without a token gets a 401 whose `WWW-Authenticate` names the RFC 9728 metadata; the
Inspector follows it to the authorization server the metadata names (a stand-in issuer here)
and asks it for a token for exactly this resource. With static keys only, the Inspector's
OAuth attempt ends in a message telling the user to send the key.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.unit.test_auth_discovery import ProtectedResourceMetadata, challenge_params

from .serverproc import HOST, free_port, require_node_tools, start_server

TOKEN = "tok-e2e-discovery"
KEYS = {"MEMLAKE_API_KEYS": f"{TOKEN}:alpha"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


class StandInIssuer:
    """An OAuth authorization server that answers discovery and registration, and records
    what it was asked (the Inspector stops at the browser step, which we never take)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        issuer = self
        self.server = ThreadingHTTPServer((HOST, 0), self._handler(issuer))
        self.url = f"http://{HOST}:{self.server.server_address[1]}"

    def _handler(self, issuer: StandInIssuer) -> type[BaseHTTPRequestHandler]:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, doc: dict[str, Any]) -> None:
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                issuer.seen.append(f"GET {self.path}")
                if self.path.startswith("/.well-known/oauth-authorization-server"):
                    return self._json(200, issuer.metadata())
                return self._json(404, {})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                issuer.seen.append(f"POST {self.path}")
                if self.path == "/register":
                    return self._json(201, {**json.loads(body), "client_id": "stand-in-client"})
                return self._json(404, {})

        return Handler

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "authorization_endpoint": self.url + "/authorize",
            "token_endpoint": self.url + "/token",
            "registration_endpoint": self.url + "/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
        }

    def __enter__(self) -> StandInIssuer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with static API keys only; yields its base URL."""
    with start_server(tmp_path_factory.mktemp("lake"), KEYS) as server:
        yield server.base_url


def test_raw_401_names_metadata_that_validates(keyed: str) -> None:
    # WHEN /mcp is called without a token
    resp = httpx.post(keyed + "/mcp", json=PING, headers={"accept": "application/json"})
    # THEN 401 with a Bearer challenge naming the metadata document
    assert resp.status_code == 401
    params = challenge_params(resp.headers["www-authenticate"])
    assert params["realm"] == "memlake"
    assert params["resource_metadata"] == keyed + "/.well-known/oauth-protected-resource/mcp"
    # AND the document there is RFC 9728 metadata of this endpoint
    doc = httpx.get(params["resource_metadata"])
    assert doc.status_code == 200
    assert str(ProtectedResourceMetadata.model_validate(doc.json()).resource) == keyed + "/mcp"
    # AND the key still works
    ok = httpx.post(
        keyed + "/mcp",
        json=PING,
        headers={"accept": "application/json", "authorization": f"Bearer {TOKEN}"},
    )
    assert ok.status_code == 200 and ok.json()["result"] == {}


def test_health_without_a_token(keyed: str) -> None:
    resp = httpx.get(keyed + "/health")
    assert resp.status_code == 200 and resp.json()["status"] == "ok"
    assert httpx.post(keyed + "/health").status_code == 405


# --- the MCP Inspector CLI --------------------------------------------------------------


@contextlib.contextmanager
def inspector(url: str, home: Path, *extra: str) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """The Inspector CLI calling tools/list on `url` with no token; output goes to a file.

    MCP_AUTO_OPEN_ENABLED lets it run its OAuth flow without a TTY; BROWSER=true makes the
    "open the authorization page" step a no-op, so it waits for a callback that never comes."""
    tools = require_node_tools()
    out = home / "inspector.out"
    env = {
        **os.environ,
        "HOME": str(home),
        "MCP_CATALOG_PATH": str(home / "catalog.json"),
        "MCP_AUTO_OPEN_ENABLED": "true",
        "MCP_INSPECTOR_SECRET_STORE": "memory",
        "BROWSER": "true",
    }
    cmd = [
        str(tools.node),
        str(tools.inspector),
        "--cli",
        url,
        "--transport",
        "http",
        "--format",
        "json",
        "--callback-url",
        f"http://{HOST}:{free_port()}/oauth/callback",
        *extra,
        "--method",
        "tools/list",
    ]
    with out.open("w") as sink:
        proc = subprocess.Popen(
            cmd, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            text=True, start_new_session=True,
        )  # fmt: skip
    try:
        yield proc, out
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)  # the launcher and the CLI it started
        proc.wait(10)


def _wait_for(out: Path, needle: str, proc: subprocess.Popen[str], timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = out.read_text()
        if needle in text or proc.poll() is not None:
            return text
        time.sleep(0.1)
    return out.read_text()


@pytest.mark.node
@pytest.mark.slow
def test_inspector_follows_the_metadata_to_the_authorization_server(
    tmp_path: Path,
) -> None:
    require_node_tools()
    with (
        StandInIssuer() as issuer,
        start_server(
            tmp_path / "lake", {**KEYS, "MEMLAKE_AUTHORIZATION_SERVERS": issuer.url}
        ) as server,
        inspector(server.mcp_url, tmp_path) as (proc, out),
    ):
        # WHEN the Inspector meets the 401, THEN it reads our metadata, goes to the issuer it
        # names, registers and builds an authorization request for this very resource
        text = _wait_for(out, "navigate to:", proc)
        lines = [ln for ln in text.splitlines() if "navigate to:" in ln]
        assert lines, text
        auth_url = urlsplit(lines[0].split("navigate to:", 1)[1].strip())
        assert f"{auth_url.scheme}://{auth_url.netloc}{auth_url.path}" == issuer.url + "/authorize"
        query = parse_qs(auth_url.query)
        assert query["resource"] == [server.mcp_url]
        assert query["client_id"] == ["stand-in-client"]
        assert query["code_challenge_method"] == ["S256"]
        assert "GET /.well-known/oauth-authorization-server" in issuer.seen
        assert "POST /register" in issuer.seen


@pytest.mark.node
def test_inspector_on_static_keys_is_told_to_send_the_key(keyed: str, tmp_path: Path) -> None:
    require_node_tools()
    # WHEN the Inspector tries OAuth against a server that has only static keys
    with inspector(keyed + "/mcp", tmp_path) as (proc, out):
        proc.wait(60)
        text = out.read_text()
    # THEN it fails, and what it shows says how to authenticate instead
    assert proc.returncode != 0, text
    assert "Authorization: Bearer <key>" in text, text
    assert "Traceback" not in text


@pytest.mark.node
def test_inspector_without_a_token_gets_auth_required(keyed: str, tmp_path: Path) -> None:
    require_node_tools()
    with inspector(keyed + "/mcp", tmp_path, "--stored-auth-only") as (proc, out):
        proc.wait(60)
        text = out.read_text()
    assert proc.returncode == 3, text
    err = json.loads(text.strip().splitlines()[-1])["error"]
    assert err["code"] == "auth_required"
    assert "Authorization: Bearer <token>" in err["message"]
