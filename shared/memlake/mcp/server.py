"""`memlake serve`: the MCP transport on a local HTTP server (uvicorn over h11).

The server parses and bounds HTTP (chunked bodies, header size, a real listen backlog, idle
and slow-client timeouts, a connection limit answered with 503); memlake.mcp.asgi reads bodies
only after the headers passed authentication and runs the blocking McpHttpApp.handle on a
bounded thread pool. docs/decisions/1001-uvicorn-for-the-local-door.md says why.

Also runs lake maintenance in the background: compaction of tenants whose small segments
pile up, and garbage collection once an hour.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Executor, ThreadPoolExecutor

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from memlake.config import Settings
from memlake.errors import ConfigurationError
from memlake.maintenance import Maintenance
from memlake.mcp.asgi import McpAsgi
from memlake.mcp.auth import ApiKeys
from memlake.mcp.discovery import AuthDiscovery
from memlake.mcp.http import LOOPBACK_HOSTS, McpHttpApp, OriginPolicy
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
    cfg = services.settings
    origins = OriginPolicy(cfg.allowed_origins, allowed_hosts=allowed_hosts)
    discovery = AuthDiscovery(cfg.authorization_servers, cfg.public_url) if keys.enabled else None
    return McpHttpApp(
        services,
        lambda req: keys.authenticate(req.header("authorization")),
        origins,
        discovery=discovery,
        ui=True,
    )


class _Protocol(H11Protocol):
    """uvicorn's h11 protocol plus a deadline for the request line and headers.

    uvicorn times out a connection left idle after a response, but not one that never sends
    a request or trickles its headers a byte at a time: each of those would hold a socket
    forever. Here every connection must deliver a request's headers within the idle timeout
    of opening or of the previous response.
    """

    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # h11 writes a response's head and body separately; without NODELAY, Nagle plus the
        # client's delayed ACK adds ~40 ms to every keep-alive response (asyncio sets it only
        # on sockets created with proto=IPPROTO_TCP)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
        self._await_request()

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        super().data_received(data)
        if self.cycle is not cycle:  # the headers of a new request arrived
            self._cancel_deadline()

    def on_response_complete(self) -> None:
        cycle = self.cycle
        self._await_request()
        super().on_response_complete()
        if self.cycle is not cycle or self.transport.is_closing():  # pipelined, or closed
            self._cancel_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def _await_request(self) -> None:
        self._cancel_deadline()
        self._deadline = self.loop.call_later(self.timeout_keep_alive, self._expire)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()


_BIND_ERRORS = {
    errno.EADDRINUSE: "port {port} is already in use on {host}: stop the other server or pick"
    " another --port",
    errno.EACCES: "no permission to listen on {host}:{port} (ports below 1024 need privileges):"
    " pick another --port",
    errno.EADDRNOTAVAIL: "{host} is not an address of this machine: use --host 127.0.0.1 or one"
    " of its addresses",
}


def listen(host: str, port: int) -> socket.socket:
    """The bound (not yet listening) server socket; uvicorn listens with the configured backlog.

    Raises ConfigurationError, a message fit for one line, when the address cannot be bound."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except (OSError, OverflowError) as e:
        sock.close()
        code = e.errno if isinstance(e, OSError) else None
        template = _BIND_ERRORS.get(code or 0, "cannot listen on {host}:{port}: {reason}")
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ConfigurationError(template.format(host=host, port=port, reason=reason)) from e
    return sock


def http_server(app: McpHttpApp, executor: Executor) -> uvicorn.Server:
    """uvicorn (h11) serving `app`; see docs/decisions/1001-uvicorn-for-the-local-door.md."""
    cfg = app.services.settings
    config = uvicorn.Config(
        McpAsgi(app, executor, body_timeout=cfg.http_body_timeout),
        http=_Protocol,
        ws="none",
        lifespan="off",
        interface="asgi3",
        loop="asyncio",
        log_config=None,
        access_log=False,
        server_header=False,  # the old one said "memlake Python/3.11.x"
        proxy_headers=False,
        backlog=cfg.http_backlog,
        limit_concurrency=cfg.http_max_connections,
        timeout_keep_alive=cfg.http_idle_timeout,  # and, in _Protocol, the header deadline
        timeout_graceful_shutdown=5,
    )
    return uvicorn.Server(config)


def _executor(settings: Settings) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(settings.http_workers, thread_name_prefix="memlake-http")


@contextlib.contextmanager
def serving_in_thread(app: McpHttpApp, host: str = "127.0.0.1") -> Iterator[str]:
    """The server on a free port, on a thread of this process; yields its /mcp URL."""
    sock = listen(host, 0)
    executor = _executor(app.services.settings)
    server = http_server(app, executor)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started and thread.is_alive():
            time.sleep(0.01)
        yield f"http://{host}:{sock.getsockname()[1]}{app.path}"
    finally:
        server.should_exit = True
        thread.join(10)
        executor.shutdown(wait=False, cancel_futures=True)
        sock.close()


def serve(settings: Settings, *, host: str, port: int) -> None:
    services = Services.build(settings)
    app = build_app(services, host=host)
    sock = listen(host, port)
    executor = _executor(settings)
    server = http_server(app, executor)
    maintenance = Maintenance(services)
    maintenance.start()
    where = settings.data_dir if settings.store == "local" else f"s3://{settings.bucket}"
    print(
        f"memlake serving MCP at http://{host}:{sock.getsockname()[1]}/mcp (lake: {where})",
        flush=True,
    )
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        maintenance.stop_event.set()
        executor.shutdown(wait=False, cancel_futures=True)
        sock.close()
