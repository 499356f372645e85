"""The relationship graph tools end to end through /mcp with the official client, on both lakes:
the whole workflow, exports with hostile titles (DOT parsed by pydot, Mermaid by Mermaid's own
parser), the audit trail, tenant isolation and bad input."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from memlake.graph import Edge, GraphNode, normalize_label, to_dot, to_mermaid
from memlake.relationships.views import label_of
from tests.unit.test_graph_export import (
    check_mermaid_structure,
    mermaid_stored_text,
    parse_dot,
    run_mermaid_parser,
)

from .conftest import TOKENS, ServerUnderTest
from .mcp_helpers import assert_tool_error_changes_nothing, call, connect, run

pytestmark = pytest.mark.filterwarnings("ignore:'setParseAction' deprecated:DeprecationWarning")

GRAPH_TOOLS = {
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
HOSTILE_TITLES = [
    'He said "hi" \\"; injected [label="pwned"]',
    '"]; n1["pwned"]; n0["',
    "brackets [x] (y) {z} <w> [[a]] ((b)) >e]",
    "}\ndigraph evil {\n a -> b\n}",
    "arrows a --> b ==> c -.-> d -- e --o f --x g",
    "line1\nline2\r\nline3",
    "%%{init: {'theme': 'dark'}}%% #quot; &amp; <b>x</b> `md` $$x$$ :::cls |pipe|",
    "end",
]


async def add(client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    out = await call(client, tool, args)
    assert not out["is_error"], out
    return out


async def link(client: Any, a: str, b: str, type_: str, **extra: Any) -> dict[str, Any]:
    args = {"from_episode_id": a, "to_episode_id": b, "relationship_type": type_, **extra}
    return await call(client, "add_episode_relationship", args)


def test_graph_tools_are_listed_with_annotations(mcp_url: str) -> None:
    async def scenario() -> None:
        async with connect(mcp_url, TOKENS["alpha"]) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) >= GRAPH_TOOLS
            for name in GRAPH_TOOLS - {"add_episode_relationship", "remove_episode_relationship"}:
                assert tools[name].annotations.read_only_hint is True, name
            remove = tools["remove_episode_relationship"].annotations
            assert remove.destructive_hint is True and remove.idempotent_hint is True
            assert tools["add_episode_relationship"].annotations.read_only_hint is False
            schema = tools["add_episode_relationship"].input_schema
            assert schema["properties"]["strength"]["maximum"] == 1.0

    run(scenario())


def test_relationship_workflow(mcp_url: str) -> None:
    async def scenario() -> None:
        async with connect(mcp_url, TOKENS["alpha"]) as client:
            ids = [
                (await add(client, "add_episode", {"content": f"step {i}", "summary": f"S{i}"}))[
                    "id"
                ]
                for i in range(5)
            ]
            a, b, c, d, e = ids
            ab = await link(client, a, b, "follows", strength=0.9, metadata={"why": "next"})
            assert not ab["is_error"] and ab["message"] == "Relationship added successfully"
            bc = await link(client, b, c, "causes", strength=0.8)
            cd = await link(client, c, d, "follows", strength=0.4)
            await link(client, a, e, "related_to", strength=0.7)

            cycle = await link(client, c, a, "follows")
            assert cycle["is_error"] and cycle["error"]["code"] == "conflict"
            assert f"{c} -> {a} -> {b} -> {c}" in cycle["error"]["message"]
            dup = await link(client, a, b, "follows")
            assert dup["is_error"] and dup["error"]["code"] == "already_exists"
            self_loop = await link(client, a, a, "related_to")
            assert self_loop["is_error"] and "same episode" in self_loop["error"]["message"]
            missing = await link(client, a, "01NOSUCHEPISODE", "follows")
            assert missing["is_error"] and missing["error"]["code"] == "not_found"

            valid = await call(
                client,
                "validate_no_cycles",
                {"from_episode_id": d, "to_episode_id": a, "relationship_type": "causes"},
            )
            assert valid["valid"] is False and valid["cycle_path"] == [d, a, b, c, d]

            got = await call(client, "get_episode_relationships", {"episode_id": b})
            assert {r["id"] for r in got["relationships"]} == {
                ab["relationship_id"],
                bc["relationship_id"],
            }
            outgoing = await call(
                client, "get_episode_relationships", {"episode_id": a, "direction": "outgoing"}
            )
            assert outgoing["total"] == 2
            meta = [r for r in outgoing["relationships"] if r["id"] == ab["relationship_id"]]
            assert meta[0]["metadata"] == {"why": "next"}

            related = await call(client, "find_related_episodes", {"episode_id": a, "max_depth": 3})
            assert [(r["episode_id"], r["distance"]) for r in related["related_episodes"]] == [
                (b, 1),
                (c, 2),
                (e, 1),
            ]  # d: 0.9 * 0.8 * 0.4 < 0.5
            assert related["related_episodes"][1]["path"] == [
                ab["relationship_id"],
                bc["relationship_id"],
            ]
            assert related["related_episodes"][1]["total_strength"] == pytest.approx(0.72)
            assert related["related_episodes"][0]["episode_name"] == "S1"

            exists = await call(
                client, "check_relationship_exists", {"from_episode_id": a, "to_episode_id": b}
            )
            assert exists["exists"] and exists["relationships"][0]["relationship_type"] == "follows"
            backwards = await call(
                client, "check_relationship_exists", {"from_episode_id": b, "to_episode_id": a}
            )
            assert backwards == {"is_error": False, "exists": False, "relationships": []}

            order = await call(client, "get_topological_order", {"episode_ids": ids})
            placed = [(o["episode_id"], o["level"]) for o in order["ordered_episodes"]]
            assert placed == [(a, 0), (c, 0), (e, 0), (b, 1), (d, 1)]  # follows: a->b, c->d
            assert order["ordered_episodes"][3]["dependencies"] == [a]
            assert order["has_cycles"] is False and order["cycles"] == []
            by_cause = await call(
                client,
                "get_topological_order",
                {"episode_ids": ids, "relationship_type": "causes"},
            )
            deps = {
                o["episode_id"]: o.get("dependencies", []) for o in by_cause["ordered_episodes"]
            }
            assert deps[c] == [b]

            removed = await call(
                client, "remove_episode_relationship", {"relationship_id": cd["relationship_id"]}
            )
            assert removed["success"] is True
            again = await call(
                client, "remove_episode_relationship", {"relationship_id": cd["relationship_id"]}
            )
            assert again["is_error"] and "already removed" in again["error"]["message"]

            deleted = await call(client, "delete_episode", {"id": b})
            assert deleted["deleted"] == 1
            left = await call(client, "get_episode_relationships", {"episode_id": a})
            assert [r["to_episode_id"] for r in left["relationships"]] == [e]

            log = await call(client, "get_audit_log", {"episode_id": b})
            actions = [(r["action"], r["relationship_id"]) for r in log["records"]]
            cascades = {
                ("cascade_delete", ab["relationship_id"]),
                ("cascade_delete", bc["relationship_id"]),
            }
            assert set(actions[:2]) == cascades  # newest first
            assert actions[2:] == [
                ("add_relationship", bc["relationship_id"]),
                ("add_relationship", ab["relationship_id"]),
            ]
            assert all(r["details"]["deleted_episode_id"] == b for r in log["records"][:2])
            token_id = hashlib.sha256(TOKENS["alpha"].encode()).hexdigest()[:12]
            assert {r["token_id"] for r in log["records"]} == {token_id}
            assert {r["tenant"] for r in log["records"]} == {"alpha"}
            removal = await call(client, "get_audit_log", {"action": "remove_relationship"})
            assert cd["relationship_id"] in [r["relationship_id"] for r in removal["records"]]

    run(scenario())


async def hostile_graph(client: Any) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """Episodes titled with hostile strings (summaries; one content-only) in a chain."""
    ids, labels = [], []
    for i, title in enumerate(HOSTILE_TITLES):
        args = (
            {"content": f"{title}\nsecond line"} if i == 0 else {"content": "x", "summary": title}
        )
        ids.append((await add(client, "add_episode", args))["id"])
        labels.append(label_of(None, args.get("summary"), args["content"]))
    rels = [
        await link(client, ids[i], ids[i + 1], "follows", strength=0.5) for i in range(len(ids) - 1)
    ]
    rels.append(await link(client, ids[0], ids[-1], "contradicts"))
    assert not any(r["is_error"] for r in rels)
    return ids, labels, rels


def test_exports_with_hostile_titles_parse(mcp_url: str) -> None:
    async def scenario() -> tuple[list[str], list[str], dict[str, dict[str, Any]]]:
        async with connect(mcp_url, TOKENS["alpha"]) as client:
            ids, labels, _ = await hostile_graph(client)
            outs = {
                fmt: await call(client, "get_dependency_graph", {"episode_ids": ids, "format": fmt})
                for fmt in ("json", "graphviz", "mermaid")
            }
            return ids, labels, outs

    ids, labels, outs = run(scenario())
    data = outs["json"]
    assert [n["id"] for n in data["nodes"]] == sorted(ids)
    assert {n["id"]: n["label"] for n in data["nodes"]} == dict(zip(ids, labels, strict=True))
    assert data["node_count"] == len(ids) and data["edge_count"] == len(ids)
    assert data["truncated"] is False and data.get("graph") is None
    nodes = [GraphNode(n["id"], n["label"], n["created_at"]) for n in data["nodes"]]
    edges = [Edge(e["id"], e["from"], e["to"], e["type"], e["strength"]) for e in data["edges"]]

    dot = outs["graphviz"]["graph"]
    assert dot == to_dot(nodes, edges) and outs["graphviz"].get("nodes") is None
    parsed_labels, parsed_edges = parse_dot(dot)
    assert parsed_labels == {
        i: normalize_label(label) for i, label in zip(ids, labels, strict=True)
    }
    assert sorted(parsed_edges) == sorted(
        (e.from_id, e.to_id, f"{e.type} ({e.strength:.2f})") for e in edges
    )

    mermaid = outs["mermaid"]["graph"]
    assert mermaid == to_mermaid(nodes, edges)
    check_mermaid_structure(mermaid, nodes, edges)


@pytest.mark.node
def test_mermaid_export_parses_with_mermaid(mcp_url: str) -> None:
    async def scenario() -> tuple[list[str], list[str], str]:
        async with connect(mcp_url, TOKENS["alpha"]) as client:
            ids, labels, _ = await hostile_graph(client)
            out = await call(
                client, "get_dependency_graph", {"episode_ids": ids, "format": "mermaid"}
            )
            return ids, labels, out["graph"]

    ids, labels, mermaid = run(scenario())
    [result] = run_mermaid_parser([mermaid])
    assert result["ok"], f"{result.get('error')}\n{mermaid}"
    by_id = dict(zip(ids, labels, strict=True))
    texts = [mermaid_stored_text(v["text"]) for v in result["vertices"]]  # type: ignore[index]
    assert texts == [normalize_label(by_id[i]).strip(" ") for i in sorted(ids)]
    assert len(result["edges"]) == len(ids)  # type: ignore[arg-type]


def test_dependency_graph_keeps_the_most_connected(mcp_url: str) -> None:
    async def scenario() -> None:
        async with connect(mcp_url, TOKENS["beta"]) as client:
            hub = (await add(client, "add_episode", {"content": "hub"}))["id"]
            spokes = [
                (await add(client, "add_episode", {"content": f"spoke {i}"}))["id"]
                for i in range(4)
            ]
            for i, spoke in enumerate(spokes):
                await link(client, hub, spoke, "part_of", strength=(i + 1) / 4)
            small = await call(client, "get_dependency_graph", {"max_nodes": 2})
            assert small["node_count"] == 2 and small["truncated"] is True
            assert hub in {n["id"] for n in small["nodes"]}  # most connected first
            # ties (one edge each) go to the oldest spoke
            assert [n["id"] for n in small["nodes"]] == sorted([hub, spokes[0]])
            assert [e["strength"] for e in small["edges"]] == [0.25]
            typed = await call(client, "get_dependency_graph", {"relationship_types": ["follows"]})
            assert typed["node_count"] == 0 and typed["edges"] == []

    run(scenario())


def test_tenants_cannot_link_or_read_each_others_graph(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as alpha:
            a1 = (await add(alpha, "add_episode", {"content": "alpha one"}))["id"]
            a2 = (await add(alpha, "add_episode", {"content": "alpha two"}))["id"]
            rel = (await link(alpha, a1, a2, "follows"))["relationship_id"]
        before = server.objects()
        async with connect(server.url, TOKENS["beta"]) as beta:
            b1 = (await add(beta, "add_episode", {"content": "beta one"}))["id"]
            after_add = server.objects()
            cross = await link(beta, b1, a1, "follows")
            assert cross["is_error"] and cross["error"]["code"] == "not_found"
            gone = await call(beta, "remove_episode_relationship", {"relationship_id": rel})
            assert gone["is_error"] and gone["error"]["code"] == "not_found"
            peek = await call(beta, "get_episode_relationships", {"episode_id": a1})
            assert peek["is_error"] and peek["error"]["code"] == "not_found"
            exists = await call(
                beta, "check_relationship_exists", {"from_episode_id": a1, "to_episode_id": a2}
            )
            assert exists["exists"] is False
            log = await call(beta, "get_audit_log", {"relationship_id": rel})
            assert log["records"] == []
            assert server.objects() == after_add  # nothing written by the refused calls
        assert set(before) <= set(after_add)

    run(scenario())


BAD_GRAPH_CALLS: list[tuple[str, dict[str, Any], str]] = [
    (
        "add_episode_relationship",
        {"from_episode_id": "a1", "to_episode_id": "b1"},
        "relationship_type",
    ),
    (
        "add_episode_relationship",
        {"from_episode_id": "a1", "to_episode_id": "b1", "relationship_type": "blocks"},
        "relationship_type",
    ),
    (
        "add_episode_relationship",
        {
            "from_episode_id": "a1",
            "to_episode_id": "b1",
            "relationship_type": "follows",
            "strength": 2,
        },
        "strength",
    ),
    (
        "add_episode_relationship",
        {"from_episode_id": "../x", "to_episode_id": "b1", "relationship_type": "follows"},
        "not a valid id",
    ),
    (
        "add_episode_relationship",
        {"from_episode_id": "a1", "to_episode_id": "a1", "relationship_type": "follows"},
        "same episode",
    ),
    (
        "add_episode_relationship",
        {
            "from_episode_id": "a1",
            "to_episode_id": "b1",
            "relationship_type": "follows",
            "metadata": {"blob": "y" * 20_000},
        },
        "limit is",
    ),
    ("remove_episode_relationship", {"relationship_id": "a/b"}, "not a valid id"),
    ("get_episode_relationships", {"episode_id": "a1", "direction": "up"}, "direction"),
    ("get_episode_relationships", {"episode_id": "a1", "min_strength": -1}, "min_strength"),
    ("get_episode_relationships", {"episode_id": "a1", "limit": 0}, "limit"),
    ("find_related_episodes", {"episode_id": "a1", "max_depth": 6}, "max_depth"),
    ("find_related_episodes", {"episode_id": "a1", "max_depth": 0}, "max_depth"),
    ("find_related_episodes", {"episode_id": "a1", "min_strength": 0}, "min_strength"),
    (
        "find_related_episodes",
        {"episode_id": "a1", "relationship_types": ["x"]},
        "relationship_types",
    ),
    ("check_relationship_exists", {"from_episode_id": "a1"}, "to_episode_id"),
    ("get_dependency_graph", {"max_nodes": 501}, "max_nodes"),
    ("get_dependency_graph", {"max_nodes": 0}, "max_nodes"),
    ("get_dependency_graph", {"format": "svg"}, "format"),
    ("get_dependency_graph", {"episode_ids": ["e1"] * 501}, "episode_ids"),
    ("get_dependency_graph", {"episode_ids": ["01NOSUCHEPISODE"]}, "no such episode"),
    (
        "validate_no_cycles",
        {"from_episode_id": "a1", "to_episode_id": "b1", "relationship_type": "related_to"},
        "nothing to validate",
    ),
    ("get_topological_order", {"relationship_type": "part_of"}, "relationship_type"),
    ("get_topological_order", {"limit": 5000}, "limit"),
    ("get_audit_log", {"limit": 101}, "limit"),
    ("get_audit_log", {"cursor": "%%%"}, "cursor"),
]


@pytest.mark.parametrize(("tool", "args", "expect"), BAD_GRAPH_CALLS, ids=lambda v: str(v)[:40])
def test_bad_graph_arguments_are_tool_errors(
    server: ServerUnderTest, tool: str, args: dict[str, Any], expect: str
) -> None:
    assert_tool_error_changes_nothing(server, TOKENS["alpha"], tool, args, expect)
