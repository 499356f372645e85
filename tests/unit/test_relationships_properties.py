"""Property tests for the tool layer of the relationship graph, with networkx as the reference:
random add/remove/compact sequences keep follows+causes acyclic, reject exactly the duplicates
and cycles networkx predicts, and leave an incrementally maintained index equal to a full
rebuild; queries over randomly written graphs (cycles allowed) match the reference."""

from __future__ import annotations

import tempfile
from typing import Any

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlake.errors import AlreadyExists, Conflict, NotFound
from memlake.graph import RELATIONSHIP_TYPES, Edge, find_related
from memlake.ids import new_id
from memlake.lake import Lake, Transaction
from memlake.lake.compaction import compact
from memlake.relationships import relationship_index
from memlake.relationships.index import RelIndex, _build
from memlake.store.local import LocalStore
from memlake.timeutil import now
from tests.wiring import bare_lake

from .tools.support import Caller

ORDER = {"follows", "causes"}
N_EPISODES = 5

add_op = st.tuples(
    st.just("add"),
    st.integers(0, N_EPISODES - 1),
    st.integers(0, N_EPISODES - 1),
    st.sampled_from(["follows", "causes", "follows", "causes", "related_to", "refines"]),
    st.sampled_from([0.25, 0.5, 1.0]),
)
# Mostly adds (so cycles and duplicates come up often), with removes, compactions and
# episode deletions in between.
op = st.sampled_from(["add"] * 8 + ["remove", "compact", "delete_episode"]).flatmap(
    lambda kind: {
        "add": add_op,
        "remove": st.tuples(st.just("remove"), st.integers(0, 50)),
        # target_rows=2 leaves multi-row segments alone, so runs start later in the list
        # (the index then re-applies a compacted tail instead of rebuilding)
        "compact": st.tuples(st.just("compact"), st.sampled_from([2, 4096])),
        "delete_episode": st.tuples(st.just("delete_episode"), st.integers(0, N_EPISODES - 1)),
    }[kind]
)


def order_graph(model: dict[str, tuple[str, str, str, float]]) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_edges_from((a, b) for a, b, t, _ in model.values() if t in ORDER)
    return graph


def assert_index_matches(index: RelIndex, model: dict[str, tuple[str, str, str, float]]) -> None:
    assert {rid: (r.from_id, r.to_id, r.type, r.strength) for rid, r in index.rows.items()} == model
    assert index.keys == {(a, b, t): rid for rid, (a, b, t, _) in model.items()}
    for adjacency, end in ((index.out, 0), (index.inc, 1)):
        flat = {rel.id for rels in adjacency.values() for rel in rels}
        assert flat == set(model)
        assert all(all(rel[1 + end] == node for rel in rels) for node, rels in adjacency.items())
        assert all(adjacency.values())  # no empty tuples left behind


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=5, max_size=30))
def test_random_changes_match_networkx_and_a_full_rebuild(ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as root:
        lake = bare_lake(LocalStore(root))
        call = Caller(lake)
        episodes = call.episodes(N_EPISODES)
        alive = set(episodes)
        model: dict[str, tuple[str, str, str, float]] = {}
        for step in ops:
            if step[0] == "add":
                _, i, j, type_, strength = step
                a, b = episodes[i], episodes[j]
                if a == b:
                    continue
                graph = order_graph(model)
                if a not in alive or b not in alive:
                    expected: type[Exception] | None = NotFound
                elif (a, b, type_) in {(x, y, t) for x, y, t, _ in model.values()}:
                    expected = AlreadyExists
                elif type_ in ORDER and b in graph and a in graph and nx.has_path(graph, b, a):
                    expected = Conflict
                else:
                    expected = None
                if expected is None:
                    rid = call.link(a, b, type_, strength=strength)["relationship_id"]
                    model[rid] = (a, b, type_, strength)
                else:
                    with pytest.raises(expected):
                        call.link(a, b, type_, strength=strength)
            elif step[0] == "remove" and model:
                rid = sorted(model)[step[1] % len(model)]
                call("remove_episode_relationship", relationship_id=rid)
                del model[rid]
            elif step[0] == "compact":
                compact(lake, "t", target_rows=step[1], min_segments=2)
            elif step[0] == "delete_episode":
                gone = episodes[step[1]]
                call("delete_episode", id=gone)
                alive.discard(gone)
                model = {k: v for k, v in model.items() if gone not in v[:2]}
            assert nx.is_directed_acyclic_graph(order_graph(model))
            snap = lake.snapshot("t")
            index = relationship_index(snap)
            assert_index_matches(index, model)
            rebuilt = _build(snap.version, snap.table("relationships"), None)
            assert rebuilt.rows == index.rows
        # a second lake on the same directory (another process) sees the same graph
        assert_index_matches(relationship_index(bare_lake(LocalStore(root)).snapshot("t")), model)


def write_raw(lake: Lake, episodes: int, edges: list[tuple[int, int, str, float]]) -> list[str]:
    """Episodes and relationships written straight into the lake (no validation: cycles ok)."""
    ids = [new_id() for _ in range(episodes)]

    def change(txn: Transaction) -> None:
        for i, episode_id in enumerate(ids):
            txn.put("episodes", {"id": episode_id, "content": f"ep {i}", "created_at": now()})
        for a, b, type_, strength in edges:
            row = {"id": new_id(), "from_id": ids[a], "to_id": ids[b], "type": type_}
            txn.put("relationships", {**row, "strength": strength, "created_at": now()})

    lake.commit("t", change)
    return ids


raw_edges = st.lists(
    st.tuples(
        st.integers(0, 6),
        st.integers(0, 6),
        st.sampled_from(RELATIONSHIP_TYPES),
        st.sampled_from([k / 8 for k in range(1, 9)]),
    ).filter(lambda e: e[0] != e[1]),
    max_size=20,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    raw_edges,
    st.integers(0, 6),
    st.integers(1, 5),
    st.sampled_from([0.01, 0.3, 0.5, 1.0]),
    st.sampled_from(["both", "outgoing", "incoming"]),
    st.none() | st.sets(st.sampled_from(RELATIONSHIP_TYPES), min_size=1),
)
def test_find_related_episodes_matches_the_library_on_the_stored_graph(
    edges: list[tuple[int, int, str, float]],
    start: int,
    depth: int,
    floor: float,
    direction: str,
    types: set[str] | None,
) -> None:
    with tempfile.TemporaryDirectory() as root:
        lake = bare_lake(LocalStore(root))
        ids = write_raw(lake, 7, edges)
        call = Caller(lake)
        got = call(
            "find_related_episodes",
            episode_id=ids[start],
            max_depth=depth,
            min_strength=floor,
            direction=direction,
            relationship_types=sorted(types) if types else None,
            limit=1000,
        )
        stored = [
            Edge(r.id, r.from_id, r.to_id, r.type, r.strength)
            for r in relationship_index(lake.snapshot("t")).rows.values()
        ]
        want = find_related(
            stored,
            ids[start],
            max_depth=depth,
            types=types,
            min_strength=floor,
            direction=direction,  # type: ignore[arg-type]
        )
        assert [
            (r["episode_id"], r["distance"], tuple(r["path"]), r["total_strength"])
            for r in got["related_episodes"]
        ] == [(r.episode_id, r.distance, r.path, r.total_strength) for r in want]
        assert all(r["episode_name"].startswith("ep ") for r in got["related_episodes"])
        # reference for the reachable set: networkx within depth hops (strengths ignored)
        if floor == 0.01 and all(s == 1.0 for *_, s in edges) and types is None:
            graph = nx.MultiDiGraph()
            graph.add_edges_from((ids[a], ids[b]) for a, b, _, _ in edges)
            if direction == "both":
                graph = graph.to_undirected()
            elif direction == "incoming":
                graph = graph.reverse()
            if ids[start] in graph:
                near = nx.single_source_shortest_path_length(graph, ids[start], cutoff=depth)
                assert {r["episode_id"]: r["distance"] for r in got["related_episodes"]} == {
                    n: d for n, d in near.items() if n != ids[start]
                }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_edges, st.sampled_from(["follows", "causes"]), st.booleans())
def test_topological_order_matches_networkx(
    edges: list[tuple[int, int, str, float]], type_: str, subset: bool
) -> None:
    with tempfile.TemporaryDirectory() as root:
        lake = bare_lake(LocalStore(root))
        ids = write_raw(lake, 7, edges)
        chosen = ids[:5] if subset else None
        got = Caller(lake)(
            "get_topological_order", relationship_type=type_, episode_ids=chosen, limit=1000
        )
        graph = nx.DiGraph()
        if chosen:
            graph.add_nodes_from(chosen)
        graph.add_edges_from(
            (ids[a], ids[b])
            for a, b, t, _ in edges
            if t == type_ and (not chosen or (ids[a] in chosen and ids[b] in chosen))
        )
        assert got["has_cycles"] == (not nx.is_directed_acyclic_graph(graph))
        placed = [o["episode_id"] for o in got["ordered_episodes"]]
        position = {node: i for i, node in enumerate(placed)}
        for node in placed:
            preds = set(graph.predecessors(node))
            entry = got["ordered_episodes"][position[node]]
            assert set(entry.get("dependencies", [])) == preds
            assert all(position[p] < position[node] for p in preds)
            longest = (
                0
                if not preds
                else 1 + max(got["ordered_episodes"][position[p]]["level"] for p in preds)
            )
            assert entry["level"] == longest
        if not got["has_cycles"]:
            assert set(placed) == set(graph.nodes)
        else:
            assert got["cycles"]
            for cycle in got["cycles"]:
                assert cycle[0] == cycle[-1]
                assert all(graph.has_edge(u, v) for u, v in zip(cycle, cycle[1:], strict=False))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    raw_edges,
    st.integers(1, 7),
    st.none() | st.sets(st.sampled_from(RELATIONSHIP_TYPES), min_size=1),
)
def test_dependency_graph_keeps_the_most_connected_and_all_edges_among_them(
    edges: list[tuple[int, int, str, float]], max_nodes: int, types: set[str] | None
) -> None:
    with tempfile.TemporaryDirectory() as root:
        lake = bare_lake(LocalStore(root))
        ids = write_raw(lake, 7, edges)
        got = Caller(lake)(
            "get_dependency_graph",
            max_nodes=max_nodes,
            relationship_types=sorted(types) if types else None,
        )
        kept = [(a, b, t, s) for a, b, t, s in edges if types is None or t in types]
        degree: dict[str, int] = {}
        for a, b, _, _ in kept:
            degree[ids[a]] = degree.get(ids[a], 0) + 1
            degree[ids[b]] = degree.get(ids[b], 0) + 1
        ranked = sorted(degree, key=lambda n: (-degree[n], n))
        chosen = set(ranked[:max_nodes])
        assert {n["id"] for n in got["nodes"]} == chosen
        assert got["truncated"] == (len(ranked) > max_nodes)
        want = sorted(
            (ids[a], ids[b], t, s) for a, b, t, s in kept if ids[a] in chosen and ids[b] in chosen
        )
        assert sorted((e["from"], e["to"], e["type"], e["strength"]) for e in got["edges"]) == want
