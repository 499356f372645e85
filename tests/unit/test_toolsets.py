"""Toolsets (MEMLAKE_TOOLSETS / `serve --toolsets`) on the dispatch every MCP door shares:
what tools/list offers, what tools/call refuses, the instructions, the startup errors."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memlake import cli
from memlake.config import Settings
from memlake.config_values import TOOLSET_NAMES, parse_toolsets
from memlake.context import Principal, ToolContext
from memlake.errors import ConfigurationError
from memlake.mcp.dispatch import descriptors, dispatch, instructions, tool_descriptor
from memlake.mcp.protocol import INVALID_PARAMS, RpcError
from memlake.tools.registry import TOOL_NAMES, TOOLSETS, enabled_names, get_tool
from tests.wiring import tool_context

EPISODES = {"add_episode", "get_episode", "list_episodes", "search_episodes", "delete_episode"}
GRAPH = {
    "add_episode_relationship",
    "remove_episode_relationship",
    "get_episode_relationships",
    "find_related_episodes",
    "check_relationship_exists",
    "get_dependency_graph",
    "validate_no_cycles",
    "get_topological_order",
    "get_audit_log",
}


def test_toolsets_split_the_registry() -> None:
    assert tuple(TOOLSETS) == TOOLSET_NAMES
    assert set(enabled_names(["episodes"])) == EPISODES
    assert set(enabled_names(["graph"])) == GRAPH
    layers = set(enabled_names(["layers"]))
    assert layers == set(TOOL_NAMES) - EPISODES - GRAPH and "upsert_episode" in layers
    assert enabled_names(["all"]) == TOOL_NAMES
    assert enabled_names(["graph", "episodes"]) == tuple(
        n for n in TOOL_NAMES if n in EPISODES | GRAPH
    )


@pytest.mark.parametrize(
    ("raw", "expect"),
    [
        ("", ("all",)),
        ("episodes", ("episodes",)),
        (" Graph , episodes ", ("episodes", "graph")),
        ("episodes,all", ("all",)),
        ("layers,,layers", ("layers",)),
    ],
)
def test_parse_toolsets(raw: str, expect: tuple[str, ...]) -> None:
    assert parse_toolsets(raw) == expect


def test_an_unknown_toolset_is_a_clear_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLAKE_TOOLSETS", "episodes,memories")
    with pytest.raises(ConfigurationError) as info:
        Settings.from_env()
    assert info.value.message == (
        "MEMLAKE_TOOLSETS: unknown toolset 'memories'; choose from episodes, layers, graph,"
        " all (comma-separated, e.g. episodes,layers)"
    )
    with pytest.raises(ConfigurationError, match="unknown toolset 'x'"):
        Settings(toolsets=("x",))


def _ctx(toolsets: tuple[str, ...], tmp_path: Path) -> ToolContext:
    settings = replace(Settings(data_dir=tmp_path), toolsets=toolsets)
    return tool_context(Principal("default"), lake=None, settings=settings)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "toolsets", [("episodes",), ("layers",), ("graph",), ("episodes", "graph")]
)
def test_dispatch_offers_only_the_chosen_toolsets(
    toolsets: tuple[str, ...], tmp_path: Path
) -> None:
    ctx = _ctx(toolsets, tmp_path)
    listed = dispatch("tools/list", {}, modern=False, ctx=ctx, page_size=100)["tools"]
    offered = enabled_names(toolsets)
    assert [t["name"] for t in listed] == list(offered)
    for name in TOOL_NAMES:
        if name in offered:
            continue
        with pytest.raises(RpcError) as info:  # refused before any argument is looked at
            dispatch(
                "tools/call", {"name": name, "arguments": {}}, modern=False, ctx=ctx, page_size=100
            )
        assert info.value.code == INVALID_PARAMS
        assert info.value.message == f"Unknown tool: {name}. Call tools/list for the tools."
    init = dispatch(
        "initialize", {"protocolVersion": "2025-11-25"}, modern=False, ctx=ctx, page_size=100
    )
    found = dispatch("server/discover", {}, modern=True, ctx=ctx, page_size=100)
    assert init["instructions"] == found["instructions"] == instructions(toolsets)


def test_instructions_teach_the_workflow_of_the_tools_that_are_on() -> None:
    everything = instructions(("all",))
    for name in (
        "add_episode",
        "search_episodes",
        "add_thread",
        "upsert_episode",
        "upsert_concept",
        "add_episode_relationship",
    ):
        assert name in everything
    assert len(everything) <= 1200
    only_episodes = instructions(("episodes",))
    assert "add_episode" in only_episodes and "search_episodes" in only_episodes
    assert "add_thread" not in only_episodes and "relationship" not in only_episodes
    graph = instructions(("graph",))
    assert "add_episode_relationship" in graph and "add_thread" not in graph
    # every tool an instruction names is one the toolsets offer
    for toolsets in (("episodes",), ("layers",), ("graph",), ("all",)):
        text = instructions(toolsets)
        named = {w.strip(".,;:()") for w in text.split()} & set(TOOL_NAMES)
        assert named <= set(enabled_names(toolsets)), (
            toolsets,
            named - set(enabled_names(toolsets)),
        )


def test_serve_takes_toolsets_from_the_flag(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[Settings] = []
    monkeypatch.setattr("memlake.mcp.server.serve", lambda settings, **kw: seen.append(settings))
    monkeypatch.setenv("MEMLAKE_TOOLSETS", "graph")
    assert cli.main(["serve", "--data", str(tmp_path), "--toolsets", "episodes,layers"]) == 0
    assert cli.main(["serve", "--data", str(tmp_path)]) == 0
    assert [s.toolsets for s in seen] == [("episodes", "layers"), ("graph",)]
    assert cli.main(["serve", "--data", str(tmp_path), "--toolsets", "episode"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "memlake: --toolsets: unknown toolset 'episode'; choose from episodes, layers, graph,"
        " all (comma-separated, e.g. episodes,layers)"
    )
    assert len(seen) == 2


def test_descriptor_of_every_tool_is_built_once() -> None:
    assert descriptors(("graph",))[0] is descriptors()[TOOL_NAMES.index("add_episode_relationship")]
    spec = get_tool("get_episode")
    assert tool_descriptor(spec) == descriptors(("episodes",))[1]
