"""`memlake serve`: the MCP transport on a local HTTP server (stdlib, threaded).

Also runs lake maintenance in the background: compaction of tenants whose small segments
pile up, and garbage collection once an hour.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from memlake.config import Settings
from memlake.errors import ConfigurationError, MemlakeError
from memlake.lake.compaction import compact
from memlake.lake.gc import collect_garbage
from memlake.mcp.auth import ApiKeys
from memlake.mcp.http import LOOPBACK_HOSTS, HttpRequest, HttpResponse, McpHttpApp, OriginPolicy
from memlake.services import Services

log = logging.getLogger("memlake.server")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def build_app(services: Services, *, host: str) -> McpHttpApp:
    keys = ApiKeys(services.settings.api_keys)
    if not keys.enabled and not is_loopback(host):
        raise ConfigurationError(
            f"refusing to serve on {host} without API keys: set MEMLAKE_API_KEYS="
            "'token:tenant,...' or bind to 127.0.0.1"
        )
    allowed_hosts = LOOPBACK_HOSTS if is_loopback(host) else None
    origins = OriginPolicy(services.settings.allowed_origins, allowed_hosts=allowed_hosts)
    return McpHttpApp(services, lambda req: keys.authenticate(req.header("authorization")), origins)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "memlake"
    app: McpHttpApp

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes; without NODELAY, Nagle plus the
        # client's delayed ACK adds ~40 ms to every response
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _serve(self) -> None:
        limit = self.app.services.settings.max_request_bytes
        length = int(self.headers.get("content-length") or 0)
        if length > limit:
            self.send_response(413)
            self.send_header("content-type", "application/json")
            body = (
                b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body over '
                + str(limit).encode()
                + b' bytes"}}'
            )
            self.send_header("content-length", str(len(body)))
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        path = self.path.split("?", 1)[0]
        try:
            resp = self.app.handle(HttpRequest(self.command, path, headers, body))
        except Exception:  # the transport maps every error; this is the last line of defence
            log.exception("unhandled error serving %s %s", self.command, path)
            resp = HttpResponse(
                500,
                b'{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}',
                {"content-type": "application/json"},
            )
        self.send_response(resp.status)
        for name, value in resp.headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(resp.body)))
        self.end_headers()
        if resp.body:
            self.wfile.write(resp.body)

    do_POST = do_GET = do_DELETE = do_PUT = do_PATCH = _serve

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s " + format, self.address_string(), *args)


class Maintenance(threading.Thread):
    """Compacts tenants with many small segments; collects garbage hourly."""

    def __init__(self, services: Services, interval: float = 2.0) -> None:
        super().__init__(name="memlake-maintenance", daemon=True)
        self.services = services
        self.interval = interval
        self.stop_event = threading.Event()
        self._last_gc = time.monotonic()

    def run(self) -> None:
        while not self.stop_event.wait(self.interval):
            self.tick()

    def tick(self) -> None:
        lake = self.services.lake
        min_segments = self.services.settings.compact_min_segments
        gc_due = time.monotonic() - self._last_gc > 3600
        for tenant in lake.known_tenants():
            try:
                snap = lake.snapshot(tenant)
                if any(len(s) >= min_segments for s in snap.manifest.tables.values()):
                    compact(lake, tenant, min_segments=min_segments // 2)
                if gc_due:
                    collect_garbage(lake, tenant)
            except MemlakeError:
                log.exception("maintenance failed for tenant %s", tenant)
        if gc_due:
            self._last_gc = time.monotonic()
        from memlake.maintenance import embed_pending_tenants  # vectors writes left pending

        embed_pending_tenants(
            lake, lake.known_tenants(), max_passages=self.services.settings.embed_batch_passages
        )


def serve(settings: Settings, *, host: str, port: int) -> None:
    services = Services.build(settings)
    app = build_app(services, host=host)
    handler = type("Handler", (_Handler,), {"app": app})
    httpd = ThreadingHTTPServer((host, port), handler)
    httpd.daemon_threads = True
    maintenance = Maintenance(services)
    maintenance.start()
    where = settings.data_dir if settings.store == "local" else f"s3://{settings.bucket}"
    print(
        f"memlake serving MCP at http://{host}:{httpd.server_port}/mcp (lake: {where})", flush=True
    )
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        maintenance.stop_event.set()
        httpd.server_close()
