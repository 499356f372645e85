"""What tools/list costs a model: the size ceilings of issue 11 (measured as the JSON the
server sends), schemas without pydantic's noise, and plain descriptions (decision 1101)."""

from __future__ import annotations

import json
from typing import Any

from memlake.mcp.dispatch import descriptors
from memlake.mcp.schema import lean_input, lean_output
from memlake.tools.registry import TOOL_NAMES, get_tool

#: ceilings in bytes of compact JSON (issue 11); measured sizes are in docs/performance.md
WHOLE_MAX = 40_000
MODEL_MAX = 16_000
EPISODES_MODEL_MAX = 4_000
MODEL_KEYS = ("name", "description", "inputSchema")


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
    # results never carry null (decision 1111): an optional output field is its type alone
    assert out["properties"]["x"] == {"type": "string", "maxLength": 80, "minLength": 1}
    assert out["properties"]["e"] == {"enum": ["a", "b"], "type": "string"}
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
