"""Read-side helpers shared by the graph tools: episode labels, export selection, ordering."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from memlake.episodes import TABLE as EPISODES
from memlake.graph import Direction, Edge, GraphNode, TopologicalOrder, topological_order
from memlake.graph.arrays import ArcArrays
from memlake.lake.snapshot import Snapshot
from memlake.relationships.index import RelIndex
from memlake.relationships.ops import episode_not_found
from memlake.relationships.table import Rel
from memlake.timeutil import iso

CONTENT_LABEL_CHARS = 80
SUMMARY_LABEL_CHARS = 200


def label_of(title: str | None, summary: str | None, content: str | None) -> str:
    """The title or else the summary (as written, cut at 200 characters), else the start of
    the content on one line (~80 characters)."""
    named = title if title and title.strip() else summary
    if named and named.strip():
        text, limit = named.strip(), SUMMARY_LABEL_CHARS
    else:
        text, limit = " ".join((content or "").split()), CONTENT_LABEL_CHARS
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def episode_nodes(snap: Snapshot, ids: Iterable[str]) -> dict[str, GraphNode]:
    """Labels and creation times of the live episodes among ids (reads only those rows)."""
    view = snap.table(EPISODES)
    wanted: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for episode_id in ids:
        loc = view.locate(episode_id)
        if loc is not None and loc.is_live:
            wanted[loc.segment].append((loc.row, episode_id))
    nodes: dict[str, GraphNode] = {}
    for pos, items in wanted.items():
        rows = pa.array([row for row, _ in items], pa.int64())
        columns = ["title", "summary", "content", "created_at"]
        part = view.segment_table(pos).select(columns).take(rows)
        titles = part.column("title").to_pylist()
        summaries = part.column("summary").to_pylist()
        contents = pc.utf8_slice_codeunits(
            part.column("content"), 0, 4 * CONTENT_LABEL_CHARS
        ).to_pylist()
        created = part.column("created_at").to_pylist()
        for (_, episode_id), title, summary, content, at in zip(
            items, titles, summaries, contents, created, strict=True
        ):
            label = label_of(title, summary, content)
            nodes[episode_id] = GraphNode(episode_id, label, iso(at))
    return nodes


def require_episodes(snap: Snapshot, ids: list[str], field: str = "episode_ids") -> None:
    view = snap.table(EPISODES)
    for episode_id in ids:
        loc = view.locate(episode_id)
        if loc is None or loc.deleted:
            raise episode_not_found(field, episode_id)


def to_edge(rel: Rel) -> Edge:
    return Edge(rel.id, rel.from_id, rel.to_id, rel.type, rel.strength)


def _wanted(rel: Rel, types: frozenset[str] | None) -> bool:
    return types is None or rel.type in types


def ranked_by_degree(index: RelIndex, types: frozenset[str] | None) -> list[str]:
    """Episodes with at least one matching relationship, most connected first, then oldest."""
    key = ("degree", types)
    ranking = index.memo.get(key)
    if ranking is None:
        degree: Counter[str] = Counter()
        for rel in index.rows.values():
            if _wanted(rel, types):
                degree[rel.from_id] += 1
                degree[rel.to_id] += 1
        ranking = index.memo[key] = sorted(degree, key=lambda n: (-degree[n], n))
    return ranking  # type: ignore[no-any-return]


MAX_MEMO_ARCS = 4


def arc_arrays(index: RelIndex, direction: Direction, types: frozenset[str] | None) -> ArcArrays:
    """find_related's arcs for one direction and type filter, memoised per snapshot (the
    few most recent combinations)."""
    key = ("arcs", direction, types)
    arcs = index.memo.get(key)
    if arcs is None:
        rows = index.rows.values()
        arcs = ArcArrays.build([r for r in rows if _wanted(r, types)], direction)
        memoised = [k for k in list(index.memo) if k[0] == "arcs"]  # list(): atomic copy
        for stale in memoised[: max(0, len(memoised) - MAX_MEMO_ARCS + 1)]:
            index.memo.pop(stale, None)
        index.memo[key] = arcs
    return arcs  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Selection:
    nodes: list[GraphNode]
    edges: list[Edge]
    candidate_nodes: int  # episodes that qualified before max_nodes
    candidate_edges: int  # relationships among the kept episodes before the edge cap


def select_graph(
    snap: Snapshot,
    index: RelIndex,
    episode_ids: list[str] | None,
    types: frozenset[str] | None,
    max_nodes: int,
    max_edges: int,
) -> Selection:
    """Episodes to draw (given ones, else the most connected) and the edges among them; when
    edges exceed max_edges the strongest are kept. Output is in id (creation) order."""
    if episode_ids:
        require_episodes(snap, episode_ids)
        candidates = list(dict.fromkeys(episode_ids))
    else:
        candidates = ranked_by_degree(index, types)
    kept = candidates[:max_nodes]
    kept_set = set(kept)
    edges = [
        rel
        for node in kept
        for rel in index.out.get(node, ())
        if rel.to_id in kept_set and _wanted(rel, types)
    ]
    strongest = sorted(edges, key=lambda rel: (-rel.strength, rel.id))[:max_edges]
    labels = episode_nodes(snap, kept)
    return Selection(
        nodes=[labels.get(node, GraphNode(node, node)) for node in sorted(kept)],
        edges=[to_edge(rel) for rel in sorted(strongest, key=lambda rel: rel.id)],
        candidate_nodes=len(candidates),
        candidate_edges=len(edges),
    )


def order_of(
    snap: Snapshot, index: RelIndex, episode_ids: list[str] | None, type_: str
) -> TopologicalOrder:
    """Kahn's order of the given episodes (edges among them), else of every episode with a
    relationship of this type (memoised per snapshot)."""
    if episode_ids:
        require_episodes(snap, episode_ids)
        nodes = list(dict.fromkeys(episode_ids))
        kept = set(nodes)
        edges = [
            to_edge(rel)
            for node in nodes
            for rel in index.out.get(node, ())
            if rel.type == type_ and rel.to_id in kept
        ]
        return topological_order(nodes, edges)
    key = ("order", type_)
    order = index.memo.get(key)
    if order is None:
        edges = [to_edge(rel) for rel in index.rows.values() if rel.type == type_]
        order = index.memo[key] = topological_order([], edges)
    return order  # type: ignore[no-any-return]
