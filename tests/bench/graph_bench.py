"""Relationship graph tools: latency over graphs of 1,000 and 100,000 edges on the local lake.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python tests/bench/graph_bench.py [--edges 1000 100000]

For each size: a fresh local lake with max(50, E/10) episodes (short content and a summary) and E
relationships (follows/causes point from older to newer episodes so they form a DAG; the other
types are random; strengths from {1.0, 1.0, 0.9, 0.8, 0.6}), written in batches of 5,000 and
compacted, as the server's maintenance leaves a lake. Then, through the tool layer (what /mcp
runs after JSON parsing):

* cold: the first get_episode_relationships of a new process (builds the relationship index);
* get_episode_relationships on random episodes (warm), p50/p95, and on a hub episode that
  takes part in 1,000 of the edges (100 in the small graph), returning all of them;
* get_dependency_graph of 500 nodes (max_nodes=500, the most connected) in each format;
* find_related_episodes at depth 3 and 5 (default min_strength 0.5, both directions), after
  one first call that builds the snapshot's arc arrays (reported as related_first_ms);
* add_episode_relationship (a follows edge: index update for the new version + cycle check);
* one get_episode_relationships through the whole HTTP transport on loopback.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.ids import new_id
from memlake.lake import Lake, Transaction
from memlake.lake.compaction import compact
from memlake.mcp.auth import DEFAULT_TENANT
from memlake.mcp.server import build_app
from memlake.store.local import LocalStore
from memlake.timeutil import now
from memlake.tools import (
    add_episode_relationship,
    find_related_episodes,
    get_dependency_graph,
    get_episode_relationships,
)
from tests.wiring import bare_lake, services_for

TENANT = DEFAULT_TENANT  # what the HTTP server uses without API keys
LOOSE_TYPES = ["part_of", "related_to", "contradicts", "refines"]
STRENGTHS = [1.0, 1.0, 0.9, 0.8, 0.6]


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def hub_edges(n_edges: int) -> int:
    """Episode 0 takes part in this many of the edges (1,000 in the 100,000-edge graph)."""
    return min(1000, n_edges // 10)


def fill(lake: Lake, n_edges: int) -> list[str]:
    n_episodes = max(50, n_edges // 10)
    episodes = [new_id() for _ in range(n_episodes)]  # ascending: older first
    for start in range(0, n_episodes, 5000):

        def put_episodes(
            txn: Transaction, part: list[str] = episodes[start : start + 5000]
        ) -> None:
            for i, episode_id in enumerate(part):
                row = {"id": episode_id, "content": f"episode {i} " * 8, "summary": f"step {i}"}
                txn.put("episodes", {**row, "created_at": now()})

        lake.commit(TENANT, put_episodes)
    seen: set[tuple[int, int, str]] = set()
    edges: list[tuple[int, int, str, float]] = []
    while len(edges) < n_edges:
        a, b = random.sample(range(n_episodes), 2)
        if len(edges) < hub_edges(n_edges):
            a, b = 0, max(a, b)  # episode 0 is the hub
        type_ = random.choice(["follows", "causes", *LOOSE_TYPES])
        if type_ in ("follows", "causes") and a > b:
            a, b = b, a  # older -> newer keeps the order types acyclic
        if (a, b, type_) not in seen:
            seen.add((a, b, type_))
            edges.append((a, b, type_, random.choice(STRENGTHS)))
    for start in range(0, n_edges, 5000):

        def put_edges(txn: Transaction, part: list[Any] = edges[start : start + 5000]) -> None:
            for a, b, type_, strength in part:
                row = {"id": new_id(), "from_id": episodes[a], "to_id": episodes[b]}
                row |= {"type": type_, "strength": strength, "created_at": now()}
                txn.put("relationships", row)

        lake.commit(TENANT, put_edges)
    compact(lake, TENANT, target_rows=1 << 20, min_segments=2)
    return episodes


def bench_size(n_edges: int, ops: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix=f"memlake-graph-bench-{n_edges}-"))
    episodes = fill(bare_lake(LocalStore(root)), n_edges)
    settings = Settings(data_dir=root)
    services = services_for(bare_lake(LocalStore(root)), settings)  # a new process
    ctx = ToolContext(Principal(TENANT, "bench"), services)

    def get_rels(episode_id: str) -> Any:
        args = get_episode_relationships.GetEpisodeRelationshipsInput(episode_id=episode_id)
        return get_episode_relationships.run(ctx, args)

    cold = timed(lambda: get_rels(episodes[1]), 1)[0]
    get_ms = [timed(lambda: get_rels(random.choice(episodes)), 1)[0] for _ in range(ops)]
    hub = get_episode_relationships.GetEpisodeRelationshipsInput(episode_id=episodes[0], limit=1000)
    hub_count = get_episode_relationships.run(ctx, hub).count
    hub_ms = timed(lambda: get_episode_relationships.run(ctx, hub), 50)

    graph_ms = {}
    for fmt in ("json", "graphviz", "mermaid"):
        args = get_dependency_graph.GetDependencyGraphInput(format=fmt, max_nodes=500)
        out = get_dependency_graph.run(ctx, args)
        assert out.node_count == min(500, len(episodes)), out.node_count
        graph_ms[fmt] = timed(lambda args=args: get_dependency_graph.run(ctx, args), 20)

    related_ms, related_found = {}, {}
    warm = find_related_episodes.FindRelatedEpisodesInput(episode_id=episodes[0])
    related_cold = timed(lambda: find_related_episodes.run(ctx, warm), 1)[0]  # builds arcs
    for depth in (3, 5):
        sample = random.sample(episodes, 30)
        times, found = [], []
        for episode_id in sample:
            args = find_related_episodes.FindRelatedEpisodesInput(
                episode_id=episode_id, max_depth=depth
            )
            t0 = time.perf_counter()
            out = find_related_episodes.run(ctx, args)
            times.append((time.perf_counter() - t0) * 1000)
            found.append(out.total)
        related_ms[depth], related_found[depth] = times, statistics.median(found)

    add_ms = []
    for _ in range(min(ops, 100)):
        a, b = sorted(random.sample(range(len(episodes)), 2))
        args = add_episode_relationship.AddEpisodeRelationshipInput(
            from_episode_id=episodes[a], to_episode_id=episodes[b], relationship_type="follows"
        )
        t0 = time.perf_counter()
        try:
            add_episode_relationship.run(ctx, args)
        except Exception:  # noqa: BLE001 - a random pair may already be linked
            continue
        add_ms.append((time.perf_counter() - t0) * 1000)

    from tests.e2e.mcp_helpers import serve_in_thread

    http_ms = []
    with serve_in_thread(build_app(services, host="127.0.0.1")) as url, httpx.Client() as http:
        headers = {"content-type": "application/json", "accept": "application/json"}
        for i in range(ops):
            body = {"jsonrpc": "2.0", "id": i, "method": "tools/call"}
            arguments = {"episode_id": random.choice(episodes)}
            body["params"] = {"name": "get_episode_relationships", "arguments": arguments}
            t0 = time.perf_counter()
            resp = http.post(url, content=json.dumps(body), headers=headers)
            http_ms.append((time.perf_counter() - t0) * 1000)
            assert not resp.json()["result"]["isError"]

    def ms(values: list[float], p: float = 50) -> float:
        return round(pct(values, p), 3)

    return {
        "edges": n_edges,
        "episodes": len(episodes),
        "cold_first_get_ms": round(cold, 1),
        "get_rels_p50_ms": ms(get_ms),
        "get_rels_p95_ms": ms(get_ms, 95),
        "http_get_rels_p50_ms": ms(http_ms),
        "hub_relationships": hub_count,
        "hub_get_rels_p50_ms": ms(hub_ms),
        **{f"graph500_{fmt}_p50_ms": ms(v) for fmt, v in graph_ms.items()},
        "related_first_ms": round(related_cold, 1),
        "related_d3_p50_ms": ms(related_ms[3]),
        "related_d3_p95_ms": ms(related_ms[3], 95),
        "related_d3_found_p50": related_found[3],
        "related_d5_p50_ms": ms(related_ms[5]),
        "related_d5_p95_ms": ms(related_ms[5], 95),
        "related_d5_found_p50": related_found[5],
        "add_follows_p50_ms": ms(add_ms),
        "add_follows_p95_ms": ms(add_ms, 95),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edges", type=int, nargs="+", default=[1000, 100_000])
    parser.add_argument("--ops", type=int, default=300)
    args = parser.parse_args()
    random.seed(11)
    rows = [bench_size(n, args.ops) for n in args.edges]
    for key in rows[0]:
        print(f"{key:24} " + " ".join(f"{row[key]!s:>12}" for row in rows))


if __name__ == "__main__":
    main()
