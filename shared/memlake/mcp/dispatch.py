"""JSON-RPC methods of the MCP server: initialize / server/discover, ping, tools/list, tools/call.

Stateless: every request stands alone; the era (handshake revisions vs 2026-07-28) is decided
per request by the transport and passed in.
"""

from __future__ import annotations

import base64
from typing import Any

from pydantic import ValidationError

from memlake import __version__
from memlake.mcp.errors import error_result, success_result
from memlake.mcp.protocol import (
    HANDSHAKE_VERSIONS,
    INSTRUCTIONS,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    SERVER_NAME,
    SUPPORTED_VERSIONS,
    RpcError,
)
from memlake.mcp.wire import dumps as dumps  # re-exported: its home is memlake.mcp.wire
from memlake.tools.base import ToolContext
from memlake.tools.registry import all_tools, get_tool

SERVER_INFO = {"name": SERVER_NAME, "title": "memlake episodic memory", "version": __version__}
CAPABILITIES = {"tools": {"listChanged": False}}


def tool_descriptor(spec: Any) -> dict[str, Any]:
    input_schema = spec.input_model.model_json_schema()
    output_schema = spec.output_model.model_json_schema(mode="serialization")
    return {
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": input_schema,
        "outputSchema": output_schema,
        "annotations": spec.annotations.to_mcp(spec.title),
    }


_descriptors: list[dict[str, Any]] | None = None


def descriptors() -> list[dict[str, Any]]:
    global _descriptors
    if _descriptors is None:
        _descriptors = [tool_descriptor(spec) for spec in all_tools()]
    return _descriptors


def initialize(params: dict[str, Any]) -> dict[str, Any]:
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise RpcError(INVALID_PARAMS, "initialize needs params.protocolVersion (a string)")
    version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
    return {
        "protocolVersion": version,
        "capabilities": CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "instructions": INSTRUCTIONS,
    }


def discover() -> dict[str, Any]:
    return {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "instructions": INSTRUCTIONS,
        "ttlMs": 0,
        "cacheScope": "public",
    }


def _decode_cursor(cursor: Any) -> int:
    if cursor is None:
        return 0
    try:
        offset = int(base64.urlsafe_b64decode(str(cursor).encode()).decode())
        if offset < 0:
            raise ValueError
        return offset
    except (ValueError, UnicodeDecodeError):
        raise RpcError(INVALID_PARAMS, "Invalid cursor for tools/list") from None


def list_tools(params: dict[str, Any], page_size: int) -> dict[str, Any]:
    tools = descriptors()
    offset = _decode_cursor(params.get("cursor"))
    if offset > len(tools):
        raise RpcError(INVALID_PARAMS, "Invalid cursor for tools/list")
    page = tools[offset : offset + page_size]
    result: dict[str, Any] = {"tools": page}
    if offset + page_size < len(tools):
        result["nextCursor"] = base64.urlsafe_b64encode(str(offset + page_size).encode()).decode()
    return result


def call_tool(params: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "tools/call needs params.name (a string)")
    spec = get_tool(name)
    if spec is None:
        raise RpcError(
            INVALID_PARAMS, f"Unknown tool: {name[:100]}. Call tools/list for the tools."
        )
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "tools/call params.arguments must be an object")
    try:
        args = spec.input_model.model_validate(arguments)
    except ValidationError as exc:  # the caller's arguments: say which and why
        return error_result(exc, tool=name, request_id=ctx.request_id)
    try:
        output = spec.run(ctx, args)
        return success_result(output.model_dump(mode="json"))
    except ValidationError as exc:  # a model built inside the tool: our bug, not the caller's
        return error_result(RuntimeError(str(exc)), tool=name, request_id=ctx.request_id)
    except Exception as exc:
        return error_result(exc, tool=name, request_id=ctx.request_id)


def dispatch(
    method: str, params: dict[str, Any], *, modern: bool, ctx: ToolContext, page_size: int
) -> dict[str, Any]:
    if method == "tools/call":
        return call_tool(params, ctx)
    if method == "tools/list":
        return list_tools(params, page_size)
    if method == "server/discover":
        return discover()
    if not modern:
        if method == "initialize":
            return initialize(params)
        if method == "ping":
            return {}
    elif method in ("initialize", "ping"):
        raise RpcError(
            METHOD_NOT_FOUND,
            f"{method} does not exist in protocol 2026-07-28; use server/discover",
        )
    raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method[:100]}")
