"""`memlake stdio`: MCP over stdin and stdout, for clients that start their servers themselves
(Claude Desktop, Claude Code, Cursor).

The MCP stdio transport: one JSON-RPC message per line, UTF-8, no newline inside a message;
logs go to stderr and nothing but messages ever reaches stdout. Every line is answered by
memlake.mcp.rpc.answer, the function behind the HTTP doors, for the one local tenant; no
authentication (the user who starts the process owns the lake). docs/decisions/1121 says what
differs from HTTP:

- Session-ful, as the stdio transport is: a connection that opens with `initialize` speaks the
  handshake revisions (requests other than ping before it are refused; requests carrying the
  2026-07-28 `_meta` envelope after it too); one whose first request carries the envelope
  speaks 2026-07-28, every request with its envelope, and `initialize` is refused.
- Sequential: one message at a time, answered in order. A request sent while a tool runs waits
  in the pipe; `notifications/cancelled` cannot stop a running tool and is ignored.
- Bounded: a line longer than max_request_bytes is read in chunks and dropped, never held, and
  answered with -32600; a line that is not JSON gets -32700. Either way the next line is read.
- EOF on stdin ends the process (exit 0); SIGTERM or SIGINT finishes the message in hand, then
  exits 0.
- While serving, fd 1 points at stderr and fd 0 at /dev/null; the wire is a private duplicate,
  so a stray print (ours or a library's, Python or C) cannot corrupt the stream.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import uuid
from collections.abc import Iterator
from types import FrameType
from typing import Any, BinaryIO

from memlake.config import Settings
from memlake.context import Principal
from memlake.errors import ConfigurationError
from memlake.ids import TENANT_PATTERN
from memlake.maintenance import Maintenance
from memlake.mcp.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    META_CAPABILITIES,
    META_VERSION,
    MODERN_VERSIONS,
    UNSUPPORTED_VERSION,
    RpcError,
)
from memlake.mcp.rpc import Reply, answer, error_reply
from memlake.mcp.wire import BadMessage, dumps, parse_body
from memlake.services import Services

log = logging.getLogger("memlake.stdio")
CHUNK = 1 << 16
HANDSHAKE, MODERN = "handshake", "2026-07-28"


class StdioSession:
    """The protocol era of one stdio connection, fixed by its first request
    (a memlake.mcp.rpc.Session)."""

    def __init__(self) -> None:
        self.era: str | None = None
        self.version: str | None = None  # negotiated by initialize
        self.initialized = False  # notifications/initialized arrived

    def admit(self, method: str, modern: bool) -> None:
        if method == "server/discover":  # describes the server; fixes nothing
            return
        if modern:
            if self.era == HANDSHAKE:
                raise RpcError(
                    INVALID_REQUEST,
                    "This connection began with initialize (the handshake revisions);"
                    " requests carrying the 2026-07-28 _meta envelope are not accepted on it",
                )
            self.era = MODERN
        elif method == "initialize":
            if self.era == MODERN:
                raise RpcError(
                    UNSUPPORTED_VERSION,
                    "This connection speaks 2026-07-28 (its first request carried the _meta"
                    " envelope), which has no initialize",
                    {"supported": list(MODERN_VERSIONS)},
                )
            if self.era == HANDSHAKE:
                raise RpcError(INVALID_REQUEST, "Already initialized: send initialize once")
        elif self.era == MODERN:
            raise RpcError(
                INVALID_PARAMS,
                f"params._meta must carry {META_VERSION} and {META_CAPABILITIES}: this"
                " connection speaks 2026-07-28, where every request carries the envelope",
            )
        elif self.era is None and method != "ping":
            raise RpcError(
                INVALID_REQUEST,
                "Send initialize first: a stdio connection begins with the initialize"
                " handshake (or every request carries the 2026-07-28 _meta envelope)",
            )

    def answered(self, method: str, result: dict[str, Any]) -> None:
        if method == "initialize":
            self.era = HANDSHAKE
            self.version = result.get("protocolVersion")

    def notified(self, method: str) -> None:
        if method == "notifications/initialized" and self.era == HANDSHAKE:
            self.initialized = True
        else:
            log.debug("notification %s ignored", method[:100])


class _Stopped(Exception):
    """SIGTERM or SIGINT arrived while waiting for a line."""


class StdioServer:
    """Answers the lines of `wire_in` on `wire_out`, one at a time, until EOF or a signal."""

    def __init__(
        self, services: Services, principal: Principal, wire_in: BinaryIO, wire_out: BinaryIO
    ) -> None:
        self.services = services
        self.principal = principal
        self.wire_in = wire_in
        self.wire_out = wire_out
        self.session = StdioSession()
        self.limit = services.settings.max_request_bytes
        self.stopping = False
        self._waiting = False

    def serve(self) -> None:
        """Until EOF on the input, a signal (see on_signal) or a closed output."""
        try:
            while not self.stopping:
                self._waiting = True
                line = self._read()
                self._waiting = False
                if line is None:
                    return
                reply = self.reply(*line)
                if reply is not None and reply.body is not None:
                    self.wire_out.write(dumps(reply.body) + b"\n")
                    self.wire_out.flush()
        except _Stopped:
            return
        except (BrokenPipeError, ConnectionResetError):  # the client is gone
            log.info("stdout closed; stopping")

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM/SIGINT: stop now when waiting for input, else after the message in hand."""
        self.stopping = True
        if self._waiting:
            raise _Stopped

    def _read(self) -> tuple[bytes, bool] | None:
        """The next line and whether it was too long (then only its start), None at EOF."""
        line = self.wire_in.readline(self.limit + 1)
        if not line:
            return None
        if len(line) <= self.limit or line.endswith(b"\n"):
            return line, False
        while True:  # drop the rest of an over-long line without holding it
            chunk = self.wire_in.readline(CHUNK)
            if not chunk or chunk.endswith(b"\n"):
                return line[:0], True

    def reply(self, line: bytes, too_long: bool = False) -> Reply | None:
        """The answer to one line (None: a blank line, skipped)."""
        if too_long:
            return error_reply(
                400, INVALID_REQUEST, f"Request over {self.limit} bytes; send smaller messages"
            )
        if not line.strip():
            return None
        try:
            message = parse_body(line)
        except BadMessage as e:
            return error_reply(400, e.code, e.message)
        try:
            return answer(message, self.services, self.principal, session=self.session)
        except Exception:  # a bug of ours: answer it, log it, keep serving
            ref = uuid.uuid4().hex[:16]
            log.exception("internal error answering a message (reference %s)", ref)
            msg_id = message.get("id") if isinstance(message, dict) else None
            if isinstance(msg_id, bool) or not isinstance(msg_id, (str, int)):
                msg_id = None
            return error_reply(500, INTERNAL_ERROR, f"Internal error (reference {ref})", msg_id)


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The wire: private duplicates of fds 0 and 1. Meanwhile fd 0 reads /dev/null and fd 1
    (and sys.stdout) writes to stderr, so nothing else can read the input or write the output."""
    sys.stdout.flush()
    saved = os.dup(0), os.dup(1)
    wire_in = os.fdopen(os.dup(0), "rb")
    wire_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        yield wire_in, wire_out
    finally:
        sys.stdout = stdout
        for fd, old in enumerate(saved):
            os.dup2(old, fd)
            os.close(old)
        for wire in (wire_in, wire_out):
            with contextlib.suppress(OSError):
                wire.close()


def run_stdio(settings: Settings, *, tenant: str = "default") -> int:
    """Serve MCP on this process's stdin/stdout for `tenant`, with background maintenance."""
    if not TENANT_PATTERN.match(tenant):
        raise ConfigurationError(
            f"--tenant {tenant[:40]!r} is not a tenant name: lowercase letters, digits, '_', '-'"
        )
    try:
        services = Services.build(settings)
    except OSError as e:  # e.g. --data under a directory that does not exist or is read-only
        raise ConfigurationError(
            f"cannot open the lake at {e.filename or settings.data_dir}: {e.strerror or e};"
            " give --data an absolute path to a writable directory"
        ) from None
    maintenance = Maintenance(services)
    maintenance.start()
    where = settings.data_dir.resolve() if settings.store == "local" else f"s3://{settings.bucket}"
    with claimed_stdio() as (wire_in, wire_out):
        server = StdioServer(services, Principal(tenant, "stdio"), wire_in, wire_out)
        handled = (signal.SIGTERM, signal.SIGINT)
        previous = {sig: signal.signal(sig, server.on_signal) for sig in handled}
        print(f"memlake: MCP on stdio, tenant {tenant}, lake {where}", file=sys.stderr, flush=True)
        try:
            server.serve()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            maintenance.stop_event.set()
    return 0
