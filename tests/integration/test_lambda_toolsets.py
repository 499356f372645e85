"""Toolsets on AWS: the MCP function takes MEMLAKE_TOOLSETS from the stack parameter `Toolsets`
(default all) and offers only those tools; the per-tool functions are not affected."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memlake.tools.registry import TOOL_NAMES, enabled_names

from .lambda_helpers import FUNCTIONS, MCP, TEMPLATE, Stack, call, resolve_env, rpc

ALICE = {"sub": "alice", "jti": "jti-alice-1"}


def test_the_stack_parameter_sets_the_mcp_function_only() -> None:
    param = TEMPLATE["Parameters"]["Toolsets"]
    assert param["Default"] == "all"
    mcp_env = FUNCTIONS[MCP]["Properties"]["Environment"]["Variables"]
    assert mcp_env["MEMLAKE_TOOLSETS"] == {"Ref": "Toolsets"}
    assert "MEMLAKE_TOOLSETS" not in TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    for name, fn in FUNCTIONS.items():
        if name != MCP:
            assert "MEMLAKE_TOOLSETS" not in json.dumps(fn), name
    assert resolve_env(TEMPLATE, FUNCTIONS[MCP])["MEMLAKE_TOOLSETS"] == "all"


@pytest.mark.parametrize("toolsets", ["all", "graph", "episodes,layers"])
def test_the_mcp_function_offers_its_toolsets(toolsets: str, stack: Stack) -> None:
    stack.use(MEMLAKE_TOOLSETS=toolsets)

    def invoke(body: dict[str, Any]) -> dict[str, Any]:
        return json.loads(stack.mcp(body, ALICE)["body"])  # type: ignore[no-any-return]

    offered = enabled_names(toolsets.split(","))
    listed = invoke(rpc("tools/list"))["result"]["tools"]
    assert [t["name"] for t in listed] == list(offered)
    refused = [n for n in TOOL_NAMES if n not in offered]
    for name in refused[:3]:
        error = invoke(call(name, {}))["error"]
        assert error == {
            "code": -32602,
            "message": f"Unknown tool: {name}. Call tools/list for the tools.",
        }
    init = invoke(rpc("initialize", {"protocolVersion": "2025-11-25"}))["result"]
    assert ("search_episodes" in init["instructions"]) == ("search_episodes" in offered)
