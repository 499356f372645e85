""":func:`~memlake.graph.algorithms.find_related` vectorised with numpy, for large graphs.

Same result, same order, same floats as the pure-Python version (numpy multiplies float64
exactly like Python, in the same path order); property tests hold the two equal. It runs the
same level-wise relaxation, one round per hop, with every candidate of a round handled at once:

* a node's label is (product, hops, path), the path stored as a row of edge ranks (the edge's
  position in sorted edge ids, -1 padded), so comparing rows left to right compares the id
  tuples (a -1 pad sorts before any rank, as a shorter tuple sorts first);
* a round extends the labels that changed in the previous round along every arc, drops
  candidates under min_strength or not above the target's current product, keeps each
  target's highest-product candidates and picks the smallest path among them with a lexsort,
  and installs it (see the note in the loop for why that is the whole comparison).

Build a :class:`ArcArrays` once per graph state (and direction/type filter) and reuse it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from memlake.graph.algorithms import check_depth_and_strength, check_direction
from memlake.graph.model import Direction, Related


class EdgeLike(Protocol):
    """An Edge or anything with its fields (e.g. the relationship store's rows)."""

    @property
    def id(self) -> str: ...
    @property
    def from_id(self) -> str: ...
    @property
    def to_id(self) -> str: ...
    @property
    def strength(self) -> float: ...


@dataclass(frozen=True)
class ArcArrays:
    """The arcs to follow (edges, reversed as needed for the direction) as numpy columns."""

    nodes: list[str]  # node index -> id, sorted, so index order is id order
    index: dict[str, int]
    edge_ids: list[str]  # rank -> id, sorted
    src: npt.NDArray[np.int64]
    dst: npt.NDArray[np.int64]
    strength: npt.NDArray[np.float64]
    rank: npt.NDArray[np.int64]

    @classmethod
    def build(cls, edges: Iterable[EdgeLike], direction: Direction = "both") -> ArcArrays:
        check_direction(direction)
        edge_list = list(edges)
        nodes = sorted({e.from_id for e in edge_list} | {e.to_id for e in edge_list})
        index = {node: i for i, node in enumerate(nodes)}
        edge_ids = sorted({e.id for e in edge_list})
        ranks = {edge_id: i for i, edge_id in enumerate(edge_ids)}
        froms = np.array([index[e.from_id] for e in edge_list], np.int64)
        tos = np.array([index[e.to_id] for e in edge_list], np.int64)
        strength = np.array([e.strength for e in edge_list], np.float64)
        rank = np.array([ranks[e.id] for e in edge_list], np.int64)
        parts = []
        if direction != "incoming":
            parts.append((froms, tos))
        if direction != "outgoing":
            parts.append((tos, froms))
        return cls(
            nodes=nodes,
            index=index,
            edge_ids=edge_ids,
            src=np.concatenate([p[0] for p in parts]),
            dst=np.concatenate([p[1] for p in parts]),
            strength=np.concatenate([strength] * len(parts)),
            rank=np.concatenate([rank] * len(parts)),
        )


def find_related_arrays(
    arcs: ArcArrays,
    start: str,
    *,
    max_depth: int = 2,
    min_strength: float = 0.5,
    limit: int | None = None,
) -> tuple[list[Related], int]:
    """The first ``limit`` results of find_related (all when None) and how many there are."""
    check_depth_and_strength(max_depth, min_strength)
    origin = arcs.index.get(start)
    if origin is None:
        return [], 0
    n = len(arcs.nodes)
    product = np.zeros(n, np.float64)
    hops = np.zeros(n, np.int64)
    paths = np.full((n, max_depth), -1, np.int64)
    reached = np.zeros(n, np.bool_)
    product[origin], reached[origin] = 1.0, True
    frontier = np.zeros(n, np.bool_)
    frontier[origin] = True
    # Every label installed in round r has exactly r hops (it extends one installed in round
    # r - 1). So a round's candidates all have the same hop count, more than any installed
    # label: a candidate beats an installed label only by a higher product, and ties between
    # candidates go to the smallest path (the lexsort's last keys).
    for round_ in range(max_depth):
        live = np.flatnonzero(frontier[arcs.src])
        u, v = arcs.src[live], arcs.dst[live]
        p = product[u] * arcs.strength[live]
        keep = (p >= min_strength) & ~(reached[v] & (p <= product[v]))
        live, u, v, p = live[keep], u[keep], v[keep], p[keep]
        if live.size == 0:
            break
        # keep each target's highest-product candidates (group by target with a cheap integer
        # sort), then break their ties by path with one lexsort over the few left
        by_target = np.argsort(v, kind="stable")
        v, p, live, u = v[by_target], p[by_target], live[by_target], u[by_target]
        starts = np.concatenate(([True], v[1:] != v[:-1]))
        top = p == np.maximum.reduceat(p, np.flatnonzero(starts))[np.cumsum(starts) - 1]
        live, u, v, p = live[top], u[top], v[top], p[top]
        cand = paths[u]  # fancy indexing copies
        cand[:, round_] = arcs.rank[live]
        order = np.lexsort((*[cand[:, j] for j in range(round_, -1, -1)], v))
        v_sorted = v[order]
        best = order[np.concatenate(([True], v_sorted[1:] != v_sorted[:-1]))]
        won = v[best]
        product[won], paths[won], hops[won] = p[best], cand[best], round_ + 1
        reached[won] = True
        frontier = np.zeros(n, np.bool_)
        frontier[won] = True

    reached[origin] = False
    found = np.flatnonzero(reached)
    ranked = found[np.lexsort((found, hops[found], -product[found]))]
    page = ranked if limit is None else ranked[:limit]
    results = [
        Related(
            episode_id=arcs.nodes[i],
            distance=int(hops[i]),
            path=tuple(arcs.edge_ids[r] for r in paths[i, : hops[i]]),
            total_strength=float(product[i]),
        )
        for i in page.tolist()
    ]
    return results, int(found.size)
