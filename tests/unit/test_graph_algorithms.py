"""memlake.graph.algorithms: examples, plus property tests with networkx as the reference."""

from __future__ import annotations

import math

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlake.graph import (
    ACYCLIC_TYPES,
    RELATIONSHIP_TYPES,
    Edge,
    Related,
    find_related,
    reachable,
    topological_order,
)
from memlake.relationships.index import EMPTY, EdgeView
from memlake.relationships.table import Rel

NODES = "abcdefg"
# Dyadic strengths (k/8) multiply exactly in binary floating point, so brute force and the
# algorithm agree on every tie-break, not only on the strengths.
DYADIC = [k / 8 for k in range(9)]


def edge(eid: str, a: str, b: str, strength: float = 1.0, type_: str = "follows") -> Edge:
    return Edge(id=eid, from_id=a, to_id=b, type=type_, strength=strength)


@st.composite
def edge_lists(
    draw: st.DrawFn,
    strengths: st.SearchStrategy[float] | None = None,
    nodes: str = NODES,
    max_size: int = 14,
) -> list[Edge]:
    # Biased towards 1.0 so that long paths survive min_strength and tie often.
    strength = strengths if strengths is not None else st.just(1.0) | st.sampled_from(DYADIC)
    raw = draw(
        st.lists(
            st.tuples(
                st.sampled_from(nodes),
                st.sampled_from(nodes),
                st.sampled_from(RELATIONSHIP_TYPES[:3]) | st.sampled_from(RELATIONSHIP_TYPES),
                strength,
            ),
            max_size=max_size,
        )
    )
    # Ids are deliberately not in insertion order, so lexicographic tie-breaks matter.
    return [edge(f"e{(7 * i) % 23:02d}-{i}", a, b, s, t) for i, (a, b, t, s) in enumerate(raw)]


def digraph(edges: list[Edge], nodes: str = "") -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((e.from_id, e.to_id) for e in edges)
    return graph


# --- reachable -------------------------------------------------------------------------


@given(edge_lists(), st.sampled_from(NODES))
def test_reachable_matches_networkx(edges: list[Edge], start: str) -> None:
    graph = digraph(edges, NODES)
    assert reachable(edges, start) == nx.descendants(graph, start)
    assert reachable(edges, start, "incoming") == nx.ancestors(graph, start)
    both = nx.node_connected_component(graph.to_undirected(), start) - {start}
    assert reachable(edges, start, direction="both") == both


def test_reachable_unknown_start_and_bad_direction() -> None:
    assert reachable([edge("1", "a", "b")], "zzz") == set()
    with pytest.raises(ValueError):
        reachable([], "a", direction="sideways")  # type: ignore[arg-type]


# --- cycle_if_added: the production check (EdgeView over the relationship index) ----------


def find_cycle_if_added(edges: list[Edge], from_id: str, to_id: str) -> list[str] | None:
    """What add_episode_relationship / validate_no_cycles ask: EdgeView.cycle_if_added over an
    index holding `edges` (it follows only the ordering types, ACYCLIC_TYPES)."""
    rels = {e.id: Rel(e.id, e.from_id, e.to_id, e.type, e.strength, 0, None) for e in edges}
    return EdgeView(EMPTY.derive(1, (), rels)).cycle_if_added(from_id, to_id)


def test_find_cycle_if_added_examples() -> None:
    edges = [edge("1", "b", "x"), edge("2", "x", "a"), edge("3", "a", "y")]
    assert find_cycle_if_added(edges, "a", "b") == ["a", "b", "x", "a"]
    assert find_cycle_if_added(edges, "b", "a") is None
    assert find_cycle_if_added(edges, "q", "q") == ["q", "q"]
    assert find_cycle_if_added([], "a", "b") is None
    assert find_cycle_if_added([edge("1", "b", "a")], "a", "b") == ["a", "b", "a"]


def test_cycle_if_added_follows_only_the_ordering_types() -> None:
    ordering = [edge("1", "b", "x", type_="follows"), edge("2", "x", "a", type_="causes")]
    assert find_cycle_if_added(ordering, "a", "b") == ["a", "b", "x", "a"]
    other = [edge("1", "b", "x", type_="part_of"), edge("2", "x", "a", type_="follows")]
    assert find_cycle_if_added(other, "a", "b") is None


@given(edge_lists(), st.sampled_from(NODES), st.sampled_from(NODES))
def test_find_cycle_if_added_matches_networkx(edges: list[Edge], src: str, dst: str) -> None:
    graph = digraph([e for e in edges if e.type in ACYCLIC_TYPES], NODES)
    cycle = find_cycle_if_added(edges, src, dst)
    closes = src == dst or nx.has_path(graph, dst, src)
    assert (cycle is not None) == closes
    if nx.is_directed_acyclic_graph(graph):
        with_new = graph.copy()
        with_new.add_edge(src, dst)
        assert (cycle is not None) == (not nx.is_directed_acyclic_graph(with_new))
    if cycle is None:
        return
    assert cycle[0] == cycle[-1] == src
    assert cycle[1] == dst
    assert len(set(cycle[:-1])) == len(cycle) - 1  # simple
    assert all(graph.has_edge(u, v) for u, v in zip(cycle[1:], cycle[2:], strict=False))
    if src != dst:  # BFS: a shortest way back
        assert len(cycle) - 2 == nx.shortest_path_length(graph, dst, src)


def test_find_cycle_if_added_long_chain_no_recursion() -> None:
    n = 60_000
    edges = [edge(str(i), f"n{i}", f"n{i + 1}") for i in range(n)]
    cycle = find_cycle_if_added(edges, f"n{n}", "n0")
    assert cycle is not None and len(cycle) == n + 2
    assert find_cycle_if_added(edges, "n0", f"n{n}") is None


# --- find_related ----------------------------------------------------------------------


def brute_force_related(
    edges: list[Edge],
    start: str,
    max_depth: int,
    types: frozenset[str] | None,
    min_strength: float,
    direction: str,
) -> list[Related]:
    graph: nx.MultiGraph | nx.MultiDiGraph = (
        nx.MultiGraph() if direction == "both" else nx.MultiDiGraph()
    )
    for e in edges:
        if types is not None and e.type not in types:
            continue
        a, b = (e.to_id, e.from_id) if direction == "incoming" else (e.from_id, e.to_id)
        graph.add_edge(a, b, key=e.id, strength=e.strength)
    if start not in graph:
        return []
    best: dict[str, tuple[float, int, tuple[str, ...]]] = {}
    for target in graph.nodes:
        if target == start:
            continue
        for path in nx.all_simple_edge_paths(graph, start, target, cutoff=max_depth):
            product = 1.0
            for u, v, key in path:
                product *= graph.edges[u, v, key]["strength"]
            if product < min_strength:
                continue
            label = (-product, len(path), tuple(key for _, _, key in path))
            if target not in best or label < best[target]:
                best[target] = label
    ranked = sorted((label[0], label[1], node, label[2]) for node, label in best.items())
    return [Related(node, hops, path, -neg) for neg, hops, node, path in ranked]


RELATED_NODES = "abcde"  # few nodes, many edges: dense graphs with many competing paths
related_args = {
    "start": st.sampled_from(RELATED_NODES),
    "max_depth": st.integers(1, 5),
    "types": st.none() | st.frozensets(st.sampled_from(RELATIONSHIP_TYPES), min_size=3),
    "min_strength": st.sampled_from([1 / 64, 1 / 8, 0.25, 0.5, 0.75, 1.0]),
    "direction": st.sampled_from(["outgoing", "incoming", "both"]),
}


@settings(max_examples=1000)
@given(edges=edge_lists(nodes=RELATED_NODES, max_size=16), **related_args)
def test_find_related_matches_brute_force(
    edges: list[Edge],
    start: str,
    max_depth: int,
    types: frozenset[str] | None,
    min_strength: float,
    direction: str,
) -> None:
    got = find_related(
        edges,
        start,
        max_depth=max_depth,
        types=types,
        min_strength=min_strength,
        direction=direction,  # type: ignore[arg-type]
    )
    assert got == brute_force_related(edges, start, max_depth, types, min_strength, direction)


@settings(max_examples=200)
@given(
    edges=edge_lists(strengths=st.floats(0.0, 1.0), nodes=RELATED_NODES, max_size=16),
    min_strength=st.floats(1e-6, 1.0),
    **{k: v for k, v in related_args.items() if k != "min_strength"},
)
def test_find_related_arbitrary_floats(
    edges: list[Edge],
    start: str,
    max_depth: int,
    types: frozenset[str] | None,
    min_strength: float,
    direction: str,
) -> None:
    """With any floats the reached nodes and strengths are exact; paths are valid."""
    got = find_related(
        edges,
        start,
        max_depth=max_depth,
        types=types,
        min_strength=min_strength,
        direction=direction,  # type: ignore[arg-type]
    )
    want = brute_force_related(edges, start, max_depth, types, min_strength, direction)
    assert {(r.episode_id, r.total_strength) for r in got} == {
        (r.episode_id, r.total_strength) for r in want
    }
    by_id = {e.id: e for e in edges}
    for rel in got:
        assert 1 <= rel.distance == len(rel.path) <= max_depth
        assert len(set(rel.path)) == len(rel.path)
        product, node, visited = 1.0, start, [start]
        for eid in rel.path:
            e = by_id[eid]
            assert types is None or e.type in types
            forward = direction != "incoming" and e.from_id == node
            backward = direction != "outgoing" and e.to_id == node
            assert forward or backward
            node = e.to_id if forward else e.from_id
            visited.append(node)
            product *= e.strength
        assert node == rel.episode_id
        assert len(set(visited)) == len(visited)
        assert product == rel.total_strength >= min_strength
    keys = [(-r.total_strength, r.distance, r.episode_id) for r in got]
    assert keys == sorted(keys)


def test_find_related_example() -> None:
    edges = [
        edge("ab", "a", "b", 0.9),
        edge("bc", "b", "c", 0.9),
        edge("ac", "a", "c", 0.7),  # weaker than a->b->c (0.81)
        edge("cd", "c", "d", 0.5),
        edge("xa", "x", "a", 0.6, "causes"),
    ]
    got = find_related(edges, "a", max_depth=2, min_strength=0.5)
    assert got == [
        Related("b", 1, ("ab",), 0.9),
        Related("c", 2, ("ab", "bc"), 0.9 * 0.9),
        Related("x", 1, ("xa",), 0.6),
    ]
    outgoing = find_related(edges, "a", max_depth=3, min_strength=0.3, direction="outgoing")
    assert [r.episode_id for r in outgoing] == ["b", "c", "d"]
    assert outgoing[2].path == ("ab", "bc", "cd")
    assert find_related(edges, "a", types={"causes"}, direction="incoming") == [
        Related("x", 1, ("xa",), 0.6)
    ]
    assert find_related(edges, "a", types="causes") == [Related("x", 1, ("xa",), 0.6)]
    assert find_related(edges, "nobody") == []


def test_find_related_respects_depth_within_a_round() -> None:
    # b improves c's label in round 2; round 2 must still extend c's round-1 label, or d
    # would be reached in three hops with max_depth=2.
    edges = [
        edge("sb", "s", "b", 1.0),
        edge("sc", "s", "c", 0.5),
        edge("bc", "b", "c", 1.0),
        edge("cd", "c", "d", 1.0),
    ]
    got = find_related(edges, "s", max_depth=2, min_strength=0.1, direction="outgoing")
    assert got == [
        Related("b", 1, ("sb",), 1.0),
        Related("c", 2, ("sb", "bc"), 1.0),
        Related("d", 2, ("sc", "cd"), 0.5),
    ]


def test_find_related_tie_breaks() -> None:
    # Same strength: fewer hops wins; then the lexicographically smaller edge-id path.
    edges = [
        edge("z", "a", "c", 0.5),
        edge("m", "a", "b", 1.0),
        edge("n", "b", "c", 0.5),
        edge("y", "a", "d", 1.0),
        edge("x", "a", "d", 1.0),
    ]
    got = {r.episode_id: r for r in find_related(edges, "a", max_depth=3, min_strength=0.1)}
    assert got["c"].path == ("z",)
    assert got["d"].path == ("x",)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_depth": 0},
        {"max_depth": 6},
        {"max_depth": True},
        {"max_depth": 2.0},
        {"min_strength": 0.0},
        {"min_strength": 1.5},
        {"min_strength": math.nan},
        {"direction": "up"},
    ],
)
def test_find_related_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        find_related([], "a", **kwargs)  # type: ignore[arg-type]


# --- topological_order -----------------------------------------------------------------


def _nontrivial_sccs(graph: nx.DiGraph) -> list[set[str]]:
    return [
        c
        for c in nx.strongly_connected_components(graph)
        if len(c) > 1 or graph.has_edge(next(iter(c)), next(iter(c)))
    ]


@settings(max_examples=300)
@given(edge_lists(), st.sets(st.sampled_from(NODES + "xyz")))
def test_topological_order_matches_networkx(edges: list[Edge], extra: set[str]) -> None:
    result = topological_order(sorted(extra), edges)
    graph = digraph(edges, "".join(extra))
    is_dag = nx.is_directed_acyclic_graph(graph)
    assert result.has_cycles == (not is_dag)
    assert (result.cycles == []) == is_dag

    sccs = _nontrivial_sccs(graph)
    blocked = set().union(*sccs) if sccs else set()
    for component in sccs:
        blocked |= set().union(*(nx.descendants(graph, n) for n in component))
    placed = [n.episode_id for n in result.ordered]
    assert set(placed) == set(graph.nodes) - blocked
    assert len(placed) == len(set(placed))

    position = {node: i for i, node in enumerate(placed)}
    for u, v in graph.edges:
        if u in position and v in position:
            assert position[u] < position[v]
    for node in result.ordered:
        ancestors = nx.ancestors(graph, node.episode_id)
        sub = graph.subgraph(ancestors | {node.episode_id})
        assert node.level == nx.dag_longest_path_length(sub)
        assert node.dependencies == tuple(sorted(graph.predecessors(node.episode_id)))
    assert [(n.level, n.episode_id) for n in result.ordered] == sorted(
        (n.level, n.episode_id) for n in result.ordered
    )

    assert len(result.cycles) == len(sccs)
    assert result.cycles == sorted(result.cycles)
    seen_components = []
    for cycle in result.cycles:
        assert len(cycle) >= 2 and cycle[0] == cycle[-1]
        assert len(set(cycle[:-1])) == len(cycle) - 1
        assert all(graph.has_edge(u, v) for u, v in zip(cycle, cycle[1:], strict=False))
        component = next(c for c in sccs if cycle[0] in c)
        assert set(cycle) <= component and cycle[0] == min(component)
        seen_components.append(min(component))
    assert len(set(seen_components)) == len(sccs)


def test_topological_order_example() -> None:
    edges = [
        edge("1", "a", "b"),
        edge("2", "a", "c"),
        edge("3", "b", "d"),
        edge("4", "c", "d"),
        edge("5", "a", "d", type_="causes"),
        edge("6", "b", "d", type_="causes"),  # duplicate dependency is listed once
    ]
    result = topological_order(["lonely", "a"], edges)
    assert not result.has_cycles and result.cycles == []
    assert [(n.episode_id, n.level, n.dependencies) for n in result.ordered] == [
        ("a", 0, ()),
        ("lonely", 0, ()),
        ("b", 1, ("a",)),
        ("c", 1, ("a",)),
        ("d", 2, ("a", "b", "c")),
    ]


def test_topological_order_cycles() -> None:
    edges = [
        edge("1", "root", "p"),
        edge("2", "p", "q"),
        edge("3", "q", "r"),
        edge("4", "r", "p"),
        edge("5", "q", "p"),
        edge("6", "r", "after"),
        edge("7", "s", "s"),
    ]
    result = topological_order([], edges)
    assert result.has_cycles
    assert [n.episode_id for n in result.ordered] == ["root"]
    assert result.cycles == [["p", "q", "p"], ["s", "s"]]


def test_topological_order_large_no_recursion() -> None:
    n = 50_000
    chain = [edge(str(i), f"n{i:06d}", f"n{i + 1:06d}") for i in range(n)]
    result = topological_order([], chain)
    assert not result.has_cycles and result.ordered[-1].level == n
    loop = [*chain, edge("back", f"n{n:06d}", "n000000")]
    looped = topological_order([], loop)
    assert looped.has_cycles and looped.ordered == []
    assert len(looped.cycles) == 1 and len(looped.cycles[0]) == n + 2


def test_edge_validation_and_constants() -> None:
    assert ACYCLIC_TYPES.issubset(RELATIONSHIP_TYPES)
    for bad in (-0.1, 1.01, math.nan):
        with pytest.raises(ValueError):
            edge("1", "a", "b", bad)
    with pytest.raises(AttributeError):
        edge("1", "a", "b").strength = 0.3  # type: ignore[misc]
