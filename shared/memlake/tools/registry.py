"""The tool registry: every tool the three doors (MCP endpoint, per-tool Lambdas, serve) expose."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from memlake.tools.base import ToolSpec

EPISODE_TOOLS = ("add_episode", "get_episode", "delete_episode", "list_episodes")
SEARCH_TOOLS: tuple[str, ...] = ()
MEMORY_LAYER_TOOLS: tuple[str, ...] = ()
GRAPH_TOOLS: tuple[str, ...] = ()

#: Tool names in listing order. Each is the module memlake.tools.<name> exposing SPEC.
TOOL_NAMES: tuple[str, ...] = EPISODE_TOOLS + SEARCH_TOOLS + MEMORY_LAYER_TOOLS + GRAPH_TOOLS

_cache: dict[str, ToolSpec[Any, Any]] = {}


def get_tool(name: str) -> ToolSpec[Any, Any] | None:
    if name not in TOOL_NAMES:
        return None
    spec = _cache.get(name)
    if spec is None:
        spec = _cache[name] = import_module(f"memlake.tools.{name}").SPEC
    return spec


def all_tools() -> list[ToolSpec[Any, Any]]:
    return [get_tool(name) for name in TOOL_NAMES]  # type: ignore[misc]
