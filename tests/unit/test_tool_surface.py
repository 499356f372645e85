"""What tools/list costs a model, and which tools it offers: the size ceilings of issue 11
(measured as the JSON the server sends), schemas without pydantic's noise, plain descriptions,
and toolsets (MEMLAKE_TOOLSETS / `serve --toolsets`) on the dispatch every door shares."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memlake import cli
from memlake.config import TOOLSET_NAMES, Settings, parse_toolsets
from memlake.errors import ConfigurationError
from memlake.mcp.dispatch import descriptors, dispatch, instructions, tool_descriptor
from memlake.mcp.protocol import INVALID_PARAMS, RpcError
from memlake.mcp.schema import lean_input, lean_output
from memlake.tools.base import Principal, ToolContext
from memlake.tools.registry import TOOL_NAMES, TOOLSETS, enabled_names, get_tool

#: ceilings in bytes of compact JSON (issue 11); measured sizes are in docs/performance.md
WHOLE_MAX = 40_000
MODEL_MAX = 16_000
EPISODES_MODEL_MAX = 4_000
MODEL_KEYS = ("name", "description", "inputSchema")
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


def size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def model_facing(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: t[k] for k in MODEL_KEYS} for t in tools]


def schema_nodes(node: Any) -> list[dict[str, Any]]:
    """Every subschema of `node` (property names are not schema keywords)."""
    out: list[dict[str, Any]] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if not isinstance(item, dict):
            continue
        out.append(item)
        stack.extend((item.get("properties") or {}).values())
        stack.extend((item.get("$defs") or {}).values())
        for key in ("items", "additionalProperties", "not"):
            stack.append(item.get(key))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            stack.extend(item.get(key) or [])
    return out


def test_tools_list_sizes_stay_under_the_ceilings() -> None:
    tools = descriptors()
    assert size({"tools": tools}) <= WHOLE_MAX
    assert size(model_facing(tools)) <= MODEL_MAX
    assert size(model_facing(descriptors(("episodes",)))) <= EPISODES_MODEL_MAX


def test_schemas_carry_no_pydantic_noise() -> None:
    for tool in descriptors():
        spec = get_tool(tool["name"])
        assert spec is not None
        for kind in ("inputSchema", "outputSchema"):
            text = json.dumps(tool[kind])
            assert "$ref" not in text and "$defs" not in text, (tool["name"], kind)
            for node in schema_nodes(tool[kind]):
                assert "title" not in node, (tool["name"], kind, node)
                assert "default" not in node or node["default"] is not None, (tool["name"], node)
                nulls = [n for n in node.get("anyOf", ()) if n == {"type": "null"}]
                assert not nulls, (tool["name"], kind, node)
                if kind == "outputSchema":
                    assert "description" not in node and "default" not in node, tool["name"]
                if kind == "inputSchema" and not spec.null_clears:
                    assert "null" not in json.dumps(node.get("type")), (tool["name"], node)


def test_constraints_a_model_needs_are_kept() -> None:
    tools = {t["name"]: t["inputSchema"] for t in descriptors()}
    search = tools["search_episodes"]
    assert search["required"] == ["query"]
    assert search["properties"]["limit"] == {
        "default": 10,
        "maximum": 50,
        "minimum": 1,
        "type": "integer",
    }
    assert search["properties"]["query"]["maxLength"] == 2000
    rel = tools["add_episode_relationship"]["properties"]["relationship_type"]
    assert rel["enum"] == ["follows", "causes", "part_of", "related_to", "contradicts", "refines"]
    key = tools["add_episode"]["properties"]["idempotency_key"]
    assert key["pattern"] and key["type"] == "string"
    assert tools["add_episode"]["properties"]["summary"]["maxLength"] == 4000
    assert tools["add_thread"]["properties"]["messages"]["items"]["required"] == [
        "role",
        "content",
    ]
    assert tools["find_related_episodes"]["properties"]["min_strength"]["exclusiveMinimum"] == 0


def test_every_tool_keeps_its_name_and_argument_names() -> None:
    listed = descriptors()
    assert [t["name"] for t in listed] == list(TOOL_NAMES)
    for tool in listed:
        spec = get_tool(tool["name"])
        assert spec is not None
        assert set(tool["inputSchema"]["properties"]) == set(spec.input_model.model_fields)
        required = {n for n, f in spec.input_model.model_fields.items() if f.is_required()}
        assert set(tool["inputSchema"].get("required", ())) == required, tool["name"]


def test_output_schema_requires_only_fields_that_are_always_present() -> None:
    for tool in descriptors():
        spec = get_tool(tool["name"])
        assert spec is not None
        fields = spec.output_model.model_fields
        for name in tool["outputSchema"].get("required", ()):
            field = fields[name]
            assert field.is_required(), (tool["name"], name)
            text = json.dumps(tool["outputSchema"]["properties"][name])
            assert "null" not in text.split('"properties"')[0], (tool["name"], name)
            assert tool["outputSchema"]["properties"][name].get("type") != "array", name


def test_upserts_admit_null_which_clears_a_field() -> None:
    tools = {t["name"]: t["inputSchema"] for t in descriptors()}
    assert tools["upsert_concept"]["properties"]["parent_id"]["type"] == ["string", "null"]
    assert tools["upsert_episode"]["properties"]["tags"]["type"] == ["array", "null"]
    assert tools["add_episode"]["properties"]["summary"]["type"] == "string"


def test_descriptions_are_plain_and_name_the_sibling_to_use() -> None:
    tools = {t["name"]: t for t in descriptors()}
    for tool in tools.values():
        assert "ADR" not in json.dumps(tool), tool["name"]
        assert len(tool["description"]) <= 250, tool["name"]
    assert "upsert_episode" in tools["add_episode"]["description"]
    assert "add_episode" in tools["upsert_episode"]["description"]
    for finder in ("list_episodes", "find_episodes"):
        assert "search_episodes" in tools[finder]["description"]
    for sibling in ("list_episodes", "find_episodes"):
        assert sibling in tools["search_episodes"]["description"]


def test_lean_schema_rules_on_a_small_schema() -> None:
    schema = {
        "$defs": {
            "Inner": {
                "title": "Inner",
                "type": "object",
                "properties": {"a": {"type": "integer", "title": "A"}},
                "required": ["a"],
            }
        },
        "title": "X",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "x": {
                "anyOf": [{"type": "string", "minLength": 1, "maxLength": 80}, {"type": "null"}],
                "default": None,
                "title": "X",
                "description": "an x",
            },
            "e": {
                "anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}],
                "default": None,
            },
            "inner": {"$ref": "#/$defs/Inner"},
            "n": {"type": "integer", "default": 3, "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["inner", "tags"],
    }
    assert lean_input(schema) == {
        "type": "object",
        "properties": {
            "x": {"type": "string", "description": "an x"},
            "e": {"enum": ["a", "b"], "type": "string"},
            "inner": {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "required": ["a"],
            },
            "n": {"type": "integer", "default": 3, "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["inner", "tags"],
    }
    out = lean_output(schema)
    assert out["required"] == ["inner"]  # tags: a collection, absent when empty
    assert out["properties"]["x"] == {"type": ["string", "null"], "maxLength": 80, "minLength": 1}
    assert out["properties"]["e"] == {"enum": ["a", "b", None], "type": ["string", "null"]}
    assert out["properties"]["n"] == {"type": "integer", "minimum": 1}


def test_recursive_definitions_are_kept_once() -> None:
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
        "$ref": "#/$defs/Node",
    }
    out = lean_input(schema)
    assert out["properties"]["kids"]["items"] == {"$ref": "#/$defs/Node"}
    assert out["$defs"]["Node"]["type"] == "object"


# --- toolsets ------------------------------------------------------------------------------


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
    return ToolContext(Principal("default"), lake=None, settings=settings)  # type: ignore[arg-type]


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
    monkeypatch.setattr("memlake.server.serve", lambda settings, **kw: seen.append(settings))
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
