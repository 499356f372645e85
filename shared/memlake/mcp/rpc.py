"""One decoded JSON-RPC message in, its answer out: the part of MCP every door shares.

The HTTP doors (`memlake serve`, the Lambda behind API Gateway) and the stdio door
(`memlake stdio`) all answer a message through `answer()`: envelope checks (memlake.mcp.wire),
the protocol era (the initialize handshake, or the 2026-07-28 `_meta` envelope), dispatch, and
the mapping of errors to JSON-RPC errors. What differs is passed in:

- `header`: how to read a request header. The HTTP doors pass theirs, so the 2026-07-28
  header rules apply (MCP-Protocol-Version, Mcp-Method, Mcp-Name must match the body); stdio
  has no headers and passes None, so only the `_meta` envelope decides (docs/decisions/1121).
- `session`: None for the stateless HTTP doors; stdio passes one, which holds the era a
  connection opened with and refuses what the other era sends.

A `Reply` carries the HTTP status the HTTP doors answer with (202: nothing to answer) and, for
the logs, what was asked and whether the tool failed; stdio writes the body, if any, as one line.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from memlake.context import Principal, ToolContext
from memlake.mcp.dispatch import SERVER_INFO, dispatch
from memlake.mcp.errors import ToolOutcome
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
from memlake.mcp.wire import BadMessage, check_params, classify
from memlake.services import Services

log = logging.getLogger("memlake.mcp")
_B64_WORD = re.compile(r"^=\?base64\?([A-Za-z0-9+/=]*)\?=\Z")

#: reads a request header by lower-case name (None: absent); a door without headers passes None
Header = Callable[[str], str | None]


@dataclass(frozen=True)
class Reply:
    """An answer: the JSON-RPC response (None for a notification or a response) and the HTTP
    status it goes out with; for the logs, the method and tool the message named (None: none
    readable) and whether the tool failed (a result with isError)."""

    status: int
    body: dict[str, Any] | None = None
    request_id: str = ""
    method: str | None = None
    tool: str | None = None
    tool_error: bool = False

    @property
    def ok(self) -> bool:
        return self.body is not None and "result" in self.body


def error_reply(
    status: int, code: int, message: str, msg_id: Any = None, data: Any = None
) -> Reply:
    """A JSON-RPC error response: the one place its envelope is built."""
    err = RpcError(code, message, data).to_json()
    return Reply(status, {"jsonrpc": "2.0", "id": msg_id, "error": err})


def asked(message: Any) -> tuple[str | None, str | None]:
    """(method, tool name) a message names, for logs: names only, never arguments."""
    method = message.get("method") if isinstance(message, dict) else None
    if not isinstance(method, str):
        return None, None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) and method == "tools/call" else None
    return method, name if isinstance(name, str) else None


class Session(Protocol):
    """What a session-ful door adds to a stateless answer (stdio: the initialize handshake)."""

    def admit(self, method: str, modern: bool) -> None:
        """Before dispatch: raise RpcError to refuse the request."""

    def answered(self, method: str, result: dict[str, Any]) -> None:
        """After a successful dispatch (e.g. initialize: the handshake happened)."""

    def notified(self, method: str) -> None:
        """A notification arrived (e.g. notifications/initialized)."""


def answer(
    message: Any,
    services: Services,
    principal: Principal,
    *,
    header: Header | None = None,
    request_id: str | None = None,
    session: Session | None = None,
) -> Reply:
    """The answer to one decoded message. Never raises for anything a client sends; an
    exception out of here is a bug of ours (the doors answer it with -32603)."""
    reply = _answer(message, services, principal, header, request_id, session)
    method, tool = asked(message)
    return replace(reply, method=method, tool=tool)


def _answer(
    message: Any,
    services: Services,
    principal: Principal,
    header: Header | None,
    request_id: str | None,
    session: Session | None,
) -> Reply:
    if isinstance(message, list):
        return error_reply(400, INVALID_REQUEST, "Batches are not supported")
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return error_reply(400, INVALID_REQUEST, "Invalid Request: not JSON-RPC 2.0")
    try:
        kind = classify(message)
    except BadMessage as e:
        return error_reply(400, e.code, e.message, e.msg_id)
    msg_id = message.get("id")
    header_version = header("mcp-protocol-version") if header is not None else None
    if header_version is not None and header_version not in (
        *SUPPORTED_VERSIONS,
        *LEGACY_TOLERATED,
    ):
        return error_reply(
            400,
            UNSUPPORTED_VERSION,
            f"Unsupported protocol version: {header_version[:40]}",
            msg_id,
            {"supported": list(SUPPORTED_VERSIONS), "requested": header_version[:40]},
        )
    if kind != "request":  # a notification, or a response to nothing we asked
        if kind == "notification" and session is not None:
            session.notified(message["method"])
        return Reply(202)
    method: str = message["method"]
    params = message.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return error_reply(400, INVALID_PARAMS, "params must be an object", msg_id)
    try:
        check_params(method, params, msg_id)
    except BadMessage as e:
        return error_reply(400, e.code, e.message, e.msg_id)
    request_id = request_id or uuid.uuid4().hex[:16]
    try:
        modern = protocol_era(method, params, header)
        if session is not None:
            session.admit(method, modern)
        started = time.perf_counter()
        ctx = ToolContext(principal=principal, services=services, request_id=request_id)
        result = dispatch(
            method, params, modern=modern, ctx=ctx, page_size=services.settings.tools_page_size
        )
        tool_error = False
        if isinstance(result, ToolOutcome):  # tools/call: what the tool came to
            tool_error = result.is_error
            result = result.to_mcp()
        if session is not None:
            session.answered(method, result)
        log.info(
            "rpc %s tool=%s tenant=%s ms=%.1f",
            method,
            params.get("name") if method == "tools/call" else "-",
            principal.tenant,
            (time.perf_counter() - started) * 1000,
            extra={"correlation_id": request_id},
        )
    except RpcError as e:
        return error_reply(e.http_status, e.code, e.message, msg_id, e.data)
    if modern:
        result = {**result, "resultType": "complete", "_meta": {META_SERVER_INFO: SERVER_INFO}}
        if method == "tools/list":
            result.setdefault("ttlMs", 0)
            result.setdefault("cacheScope", "private")
    body = {"jsonrpc": "2.0", "id": msg_id, "result": result}
    return Reply(200, body, request_id, tool_error=tool_error)


def protocol_era(method: str, params: dict[str, Any], header: Header | None) -> bool:
    """True when the request speaks 2026-07-28 (checked: raises RpcError when its envelope
    or headers are wrong), False for the handshake revisions."""
    meta = params.get("_meta")
    meta_version = meta.get(META_VERSION) if isinstance(meta, dict) else None
    if header is None:  # stdio: the envelope alone says which era a request speaks
        if not isinstance(meta, dict) or META_VERSION not in meta:
            return method == "server/discover"
        _served(_envelope_version(meta))
        return True
    header_version = header("mcp-protocol-version")
    modern = header_version in MODERN_VERSIONS or meta_version in MODERN_VERSIONS
    if method == "server/discover" and header_version is None and meta_version is None:
        return True
    if not modern:
        return False
    meta_version = _envelope_version(meta)
    if header_version != meta_version:
        raise RpcError(
            HEADER_MISMATCH,
            f"Header mismatch: MCP-Protocol-Version {header_version!r} does not match"
            f" _meta protocolVersion {meta_version!r}",
        )
    _served(meta_version)
    header_method = header("mcp-method")
    if header_method != method:
        raise RpcError(
            HEADER_MISMATCH,
            f"Header mismatch: Mcp-Method {header_method!r} does not match method {method!r}",
        )
    if method == "tools/call" and isinstance(params.get("name"), str):
        raw = header("mcp-name")
        decoded = _decode_header_value(raw) if raw is not None else None
        if decoded != params["name"]:
            raise RpcError(
                HEADER_MISMATCH,
                f"Header mismatch: Mcp-Name {raw!r} does not match params.name",
            )
    return True


def _envelope_version(meta: Any) -> str:
    """The protocol version of a 2026-07-28 `_meta` envelope; raises when it is incomplete."""
    if not isinstance(meta, dict) or not isinstance(meta.get(META_CAPABILITIES), dict):
        raise RpcError(
            INVALID_PARAMS,
            f"params._meta must carry {META_VERSION} and {META_CAPABILITIES}",
        )
    version = meta.get(META_VERSION)
    if not isinstance(version, str):
        raise RpcError(INVALID_PARAMS, f"params._meta needs {META_VERSION}")
    return version


def _served(version: str) -> None:
    if version not in MODERN_VERSIONS:
        raise RpcError(
            UNSUPPORTED_VERSION,
            f"Unsupported protocol version: {version[:40]}",
            {"supported": list(SUPPORTED_VERSIONS), "requested": version[:40]},
        )


def _decode_header_value(value: str) -> str | None:
    """A header value, decoded when it is a `=?base64?...?=` word (None: invalid base64)."""
    match = _B64_WORD.match(value)
    if not match:
        return value
    try:
        return base64.b64decode(match.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
