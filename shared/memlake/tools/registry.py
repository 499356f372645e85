"""The tool registry: every tool the three doors (MCP endpoint, per-tool Lambdas, serve) expose,
and the toolsets (MEMLAKE_TOOLSETS) that choose which of them an MCP door offers."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import import_module
from typing import Any

from memlake.tools.base import ToolSpec

EPISODE_TOOLS = ("add_episode", "get_episode", "delete_episode", "list_episodes")
SEARCH_TOOLS: tuple[str, ...] = ("search_episodes",)
MEMORY_LAYER_TOOLS: tuple[str, ...] = (
    "add_thread",
    "append_thread_messages",
    "get_thread",
    "get_pending_threads",
    "mark_thread_status",
    "delete_thread",
    "upsert_episode",
    "find_episodes",
    "get_episode_history",
    "upsert_concept",
    "get_concept",
    "find_concepts",
    "delete_concept",
    "link_episode_to_concept",
    "unlink_episode_from_concept",
)
GRAPH_TOOLS: tuple[str, ...] = (
    "add_episode_relationship",
    "remove_episode_relationship",
    "get_episode_relationships",
    "find_related_episodes",
    "check_relationship_exists",
    "get_dependency_graph",
    "validate_no_cycles",
    "get_topological_order",
    "get_audit_log",
)

#: Tool names in listing order. Each is the module memlake.tools.<name> exposing SPEC.
TOOL_NAMES: tuple[str, ...] = EPISODE_TOOLS + SEARCH_TOOLS + MEMORY_LAYER_TOOLS + GRAPH_TOOLS

#: toolset -> its tools; "all" is every tool. Its keys are config_values.TOOLSET_NAMES, which
#: Settings checks (docs/decisions/1102-toolsets.md)
TOOLSETS: dict[str, tuple[str, ...]] = {
    "episodes": EPISODE_TOOLS + SEARCH_TOOLS,
    "layers": MEMORY_LAYER_TOOLS,
    "graph": GRAPH_TOOLS,
    "all": TOOL_NAMES,
}

_cache: dict[str, ToolSpec[Any, Any]] = {}


def get_tool(name: str) -> ToolSpec[Any, Any] | None:
    if name not in TOOL_NAMES:
        return None
    spec = _cache.get(name)
    if spec is None:
        spec = _cache[name] = import_module(f"memlake.tools.{name}").SPEC
    return spec


def enabled_names(toolsets: Iterable[str]) -> tuple[str, ...]:
    """The tools of the given toolsets, in listing order (unknown names contribute nothing:
    Settings refuses them before a server starts)."""
    chosen = {name for ts in toolsets for name in TOOLSETS.get(ts, ())}
    return tuple(name for name in TOOL_NAMES if name in chosen)
