"""memlake.graph.arrays (numpy find_related) equals the pure-Python find_related, which is
itself held to a networkx brute force in test_graph_algorithms; and a few direct examples."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlake.graph import Edge, find_related
from memlake.graph.arrays import ArcArrays, find_related_arrays

from .test_graph_algorithms import RELATED_NODES, brute_force_related, edge_lists, related_args


def both(edges: list[Edge], start: str, **kwargs: object) -> None:
    types = kwargs.pop("types", None)
    direction = kwargs.get("direction", "both")
    wanted = [e for e in edges if types is None or e.type in types]  # type: ignore[operator]
    arcs = ArcArrays.build(wanted, direction)  # type: ignore[arg-type]
    depth, floor = kwargs["max_depth"], kwargs["min_strength"]
    want = find_related(edges, start, types=types, **kwargs)  # type: ignore[arg-type]
    got, total = find_related_arrays(arcs, start, max_depth=depth, min_strength=floor)  # type: ignore[arg-type]
    assert got == want
    assert total == len(want)
    page, total = find_related_arrays(arcs, start, max_depth=depth, min_strength=floor, limit=2)  # type: ignore[arg-type]
    assert page == want[:2] and total == len(want)


@settings(max_examples=600)
@given(edges=edge_lists(nodes=RELATED_NODES, max_size=16), **related_args)
def test_matches_find_related_on_dyadic_strengths(
    edges: list[Edge],
    start: str,
    max_depth: int,
    types: frozenset[str] | None,
    min_strength: float,
    direction: str,
) -> None:
    both(
        edges,
        start,
        max_depth=max_depth,
        types=types,
        min_strength=min_strength,
        direction=direction,
    )


@settings(max_examples=300)
@given(
    edges=edge_lists(strengths=st.floats(0.0, 1.0), nodes=RELATED_NODES, max_size=16),
    min_strength=st.floats(1e-6, 1.0),
    **{k: v for k, v in related_args.items() if k != "min_strength"},
)
def test_matches_find_related_on_arbitrary_floats(
    edges: list[Edge],
    start: str,
    max_depth: int,
    types: frozenset[str] | None,
    min_strength: float,
    direction: str,
) -> None:
    """Same float operations in the same order: equal even on near-ties."""
    both(
        edges,
        start,
        max_depth=max_depth,
        types=types,
        min_strength=min_strength,
        direction=direction,
    )


def test_example_and_brute_force_on_a_larger_random_graph() -> None:
    rng = random.Random(5)
    nodes = [f"n{i:02d}" for i in range(40)]
    edges = [
        Edge(f"e{i:03d}", *rng.sample(nodes, 2), "related_to", rng.choice([1.0, 0.875, 0.5]))
        for i in range(120)
    ]
    for start in nodes[:5]:
        both(edges, start, max_depth=3, min_strength=0.4, direction="both")
    arcs = ArcArrays.build(edges[:10], "outgoing")
    got, _ = find_related_arrays(arcs, edges[0].from_id, max_depth=2, min_strength=0.1)
    want = brute_force_related(edges[:10], edges[0].from_id, 2, None, 0.1, "outgoing")
    assert got == want


def test_unknown_start_and_validation() -> None:
    arcs = ArcArrays.build([Edge("e", "a", "b", "follows", 1.0)])
    assert find_related_arrays(arcs, "zzz") == ([], 0)
    with pytest.raises(ValueError):
        find_related_arrays(arcs, "a", max_depth=6)
    with pytest.raises(ValueError):
        find_related_arrays(arcs, "a", min_strength=0.0)
    with pytest.raises(ValueError):
        ArcArrays.build([], "sideways")  # type: ignore[arg-type]
    assert find_related_arrays(ArcArrays.build([]), "a") == ([], 0)
