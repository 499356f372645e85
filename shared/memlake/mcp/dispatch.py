"""JSON-RPC methods of the MCP server: initialize / server/discover, ping, tools/list, tools/call.

Stateless: every request stands alone; the era (handshake revisions vs 2026-07-28) is decided
per request by the transport and passed in.
"""

from __future__ import annotations

import base64
from collections.abc import Collection
from typing import Any

from pydantic import ValidationError

from memlake import __version__
from memlake.context import ToolContext
from memlake.mcp.errors import ToolOutcome, tool_error
from memlake.mcp.protocol import (
    HANDSHAKE_VERSIONS,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    SERVER_NAME,
    SUPPORTED_VERSIONS,
    RpcError,
)
from memlake.mcp.schema import lean_input, lean_output
from memlake.tools.base import settled_error
from memlake.tools.registry import TOOL_NAMES, enabled_names, get_tool

SERVER_INFO = {"name": SERVER_NAME, "title": "memlake episodic memory", "version": __version__}
CAPABILITIES = {"tools": {"listChanged": False}}


ALL = ("all",)


def tool_descriptor(spec: Any) -> dict[str, Any]:
    """A tool as tools/list shows it; schemas without pydantic's noise (memlake.mcp.schema)."""
    return {
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": lean_input(
            spec.input_model.model_json_schema(), null_clears=spec.null_clears
        ),
        "outputSchema": lean_output(spec.output_model.model_json_schema(mode="serialization")),
        "annotations": spec.annotations.to_mcp(),
    }


_descriptors: dict[str, dict[str, Any]] = {}


def descriptors(toolsets: Collection[str] = ALL) -> list[dict[str, Any]]:
    """The descriptors of the tools the toolsets offer, in listing order (built once each)."""
    out = []
    for name in enabled_names(toolsets):
        if name not in _descriptors:
            _descriptors[name] = tool_descriptor(get_tool(name))
        out.append(_descriptors[name])
    return out


_INTRO = (
    "memlake is your long-term memory across conversations. Memories are episodes: what"
    " happened, with when and a project context."
)
_GUIDE = {
    "episodes": (
        "Store: add_episode saves a conversation, decision or note (context scopes it to a"
        " project). Recall: search_episodes finds episodes by meaning and exact words;"
        " list_episodes browses them newest first; get_episode reads one in full."
    ),
    "layers": (
        "Layers: a thread holds a raw conversation (add_thread); an agent claims pending"
        " threads (get_pending_threads, mark_thread_status), writes each as a structured"
        " episode (upsert_episode) and extracts reusable concepts (upsert_concept,"
        " link_episode_to_concept). find_episodes filters those episodes; find_concepts and"
        " get_concept recall the knowledge and where it came from."
    ),
    "graph": (
        "Graph: add_episode_relationship links two episodes (follows, causes, part_of,"
        " related_to, contradicts, refines); find_related_episodes and"
        " get_topological_order walk the links; get_audit_log shows who changed them."
    ),
}


def instructions(toolsets: Collection[str] = ALL) -> str:
    """Server instructions for initialize and server/discover: the workflow of the tools on."""
    on = set(_GUIDE) if "all" in toolsets else set(toolsets)
    return " ".join([_INTRO, *(text for name, text in _GUIDE.items() if name in on)])


def initialize(params: dict[str, Any], toolsets: Collection[str] = ALL) -> dict[str, Any]:
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise RpcError(INVALID_PARAMS, "initialize needs params.protocolVersion (a string)")
    version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
    return {
        "protocolVersion": version,
        "capabilities": CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "instructions": instructions(toolsets),
    }


def discover(toolsets: Collection[str] = ALL) -> dict[str, Any]:
    return {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "instructions": instructions(toolsets),
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


def list_tools(
    params: dict[str, Any], page_size: int, toolsets: Collection[str] = ALL
) -> dict[str, Any]:
    tools = descriptors(toolsets)
    offset = _decode_cursor(params.get("cursor"))
    if offset > len(tools):
        raise RpcError(INVALID_PARAMS, "Invalid cursor for tools/list")
    page = tools[offset : offset + page_size]
    result: dict[str, Any] = {"tools": page}
    if offset + page_size < len(tools):
        result["nextCursor"] = base64.urlsafe_b64encode(str(offset + page_size).encode()).decode()
    return result


def call_tool(
    params: dict[str, Any], ctx: ToolContext, offered: Collection[str] = TOOL_NAMES
) -> ToolOutcome:
    """Run one tool. A tool not `offered` (outside the door's toolsets) is an unknown tool
    (RpcError); whatever the tool itself fails with is the outcome's error."""
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "tools/call needs params.name (a string)")
    spec = get_tool(name) if name in offered else None
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
        return ToolOutcome(error=tool_error(exc, tool=name, request_id=ctx.request_id))
    try:
        output = spec.run(ctx, args)
        return ToolOutcome(output.model_dump(mode="json"))
    except ValidationError as exc:  # a model built inside the tool: our bug, not the caller's
        bug = RuntimeError(str(exc))
        return ToolOutcome(error=tool_error(bug, tool=name, request_id=ctx.request_id))
    except Exception as exc:  # a missing object a newer version let go of: retryable
        settled = settled_error(ctx, exc)
        return ToolOutcome(error=tool_error(settled, tool=name, request_id=ctx.request_id))


def dispatch(
    method: str, params: dict[str, Any], *, modern: bool, ctx: ToolContext, page_size: int
) -> dict[str, Any] | ToolOutcome:
    toolsets = ctx.settings.toolsets
    if method == "tools/call":
        return call_tool(params, ctx, enabled_names(toolsets))
    if method == "tools/list":
        return list_tools(params, page_size, toolsets)
    if method == "server/discover":
        return discover(toolsets)
    if not modern:
        if method == "initialize":
            return initialize(params, toolsets)
        if method == "ping":
            return {}
    elif method in ("initialize", "ping"):
        raise RpcError(
            METHOD_NOT_FOUND,
            f"{method} does not exist in protocol 2026-07-28; use server/discover",
        )
    raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method[:100]}")
