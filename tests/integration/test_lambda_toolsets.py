"""Toolsets on AWS: the MCP function takes MEMLAKE_TOOLSETS from the stack parameter `Toolsets`
(default all) and offers only those tools; the per-tool functions are not affected."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memlake.tools.registry import TOOL_NAMES, enabled_names

from .lambda_helpers import (
    FakeContext,
    apigw_event,
    call,
    functions,
    handler_of,
    import_handler,
    lambda_env,
    load_template,
    resolve_env,
    rpc,
)

TEMPLATE = load_template()
FUNCTIONS = functions(TEMPLATE)
MCP = FUNCTIONS["McpFunction"]
ALICE = {"sub": "alice", "jti": "jti-alice-1"}


def test_the_stack_parameter_sets_the_mcp_function_only() -> None:
    param = TEMPLATE["Parameters"]["Toolsets"]
    assert param["Default"] == "all"
    assert MCP["Properties"]["Environment"]["Variables"]["MEMLAKE_TOOLSETS"] == {"Ref": "Toolsets"}
    assert "MEMLAKE_TOOLSETS" not in TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    for name, fn in FUNCTIONS.items():
        if name != "McpFunction":
            assert "MEMLAKE_TOOLSETS" not in json.dumps(fn), name
    assert resolve_env(TEMPLATE, MCP)["MEMLAKE_TOOLSETS"] == "all"


@pytest.mark.parametrize("toolsets", ["all", "graph", "episodes,layers"])
def test_the_mcp_function_offers_its_toolsets(
    toolsets: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {**resolve_env(TEMPLATE, MCP), "MEMLAKE_TOOLSETS": toolsets}
    with lambda_env(monkeypatch, env):
        handler = import_handler(handler_of(MCP))

        def invoke(body: dict[str, Any]) -> dict[str, Any]:
            resp = handler(apigw_event(body, claims=ALICE), FakeContext())
            return json.loads(resp["body"])  # type: ignore[no-any-return]

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
