"""Maintenance's shard merges (docs/decisions/2501): what one costs, and search before and after.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/merge_bench.py \
        build DIR [--episodes 32768] [--per 20]
    ... merge_bench.py merge DIR [--top 3] [--limit 1]
    ... merge_bench.py search DIR [--queries 200]
    ... merge_bench.py all DIR [--episodes 32768]     (build, search, merge, search)

- build: the write path's layout for --episodes episodes x --per realistic vectors
  (tests/bench/scale_tenant.py: tier-2 shards of 4,096 episodes, then tiers 1, 0 and the tail;
  tests/bench/vectors.py, one seed per shard), with the exact top-10 of the 200 dev-corpus
  questions kept in DIR;
- merge: in a fresh subprocess (its peak RSS is the merge's), memlake.search.merging.
  merge_shards with the tiers of `--top` over the tenant, --limit merges (default all):
  wall time, CPU time, peak RSS above the process's RSS before it, input and output bytes;
- search: warm memlake.search.hybrid.search (16 GiB shard cache, 20 warm-up queries, the query
  vector given, recency off): vector-only p50 and recall@10 against the exact top-10, hybrid
  p50, shards searched; then 5 cold searches (scale_bench.cold: a new Lake and Searcher each,
  MiniLM query embedding included, promotion off): p50, bytes and requests.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.embed.minilm import MiniLMEmbedder  # noqa: E402
from memlake.search.hybrid import search  # noqa: E402
from memlake.search.index.state import SearchState  # noqa: E402
from memlake.search.merge_policy import MergeRules  # noqa: E402
from memlake.search.merging import merge_shards  # noqa: E402
from memlake.search.query.params import SearchParams  # noqa: E402
from memlake.search.searcher import Searcher  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from tests.bench import scale_bench, scale_tenant, search_bench, vectors  # noqa: E402
from tests.bench.search_bench import pct, rss_mb  # noqa: E402
from tests.wiring import bare_lake  # noqa: E402

TENANT = scale_tenant.TENANT
MODEL = "all-MiniLM-L6-v2"
VEC_ONLY = SearchParams(weights={"bm25": 0.0, "vector": 1.0})
WARMUP = 20
COLD_RUNS = 5


class GivenVectors:
    """The searches here pass their query vectors: an embedder that only names the model."""

    name, dim, max_tokens = MODEL, vectors.DIM, 256

    def embed(self, texts: Any) -> np.ndarray:
        raise AssertionError("merge_bench passes every query vector")


def build(root: Path, episodes: int, per: int, queries: int) -> dict[str, Any]:
    root.mkdir(parents=True, exist_ok=True)
    real = vectors.real()
    qvecs = vectors.queries(real, queries)
    t0 = time.perf_counter()
    tenant = scale_tenant.build(
        bare_lake(LocalStore(root)), root, episodes, MODEL,
        lambda no, docs: vectors.passages(real, docs, per, seed=1000 + no), qvecs, per=per,
        tier=2,
    )  # fmt: skip
    texts = search_bench.query_texts(queries)
    (root / "bench.json").write_text(json.dumps({"ids": tenant.ids, "texts": texts}))
    np.save(root / "queries.npy", qvecs)
    np.save(root / "truth.npy", tenant.exact.episodes)
    return {
        "episodes": episodes,
        "build_s": round(time.perf_counter() - t0, 1),
        **shards_of(root),
    }


def shards_of(root: Path) -> dict[str, Any]:
    state = SearchState.from_extra(bare_lake(LocalStore(root)).snapshot(TENANT).extra)
    assert state is not None
    return {
        "shards": len(state.shards),
        "tiers": [s.tier for s in state.shards],
        "shard_MB": round(sum(s.bytes for s in state.shards) / 1e6, 1),
    }


def merge(root: Path, top: int, limit: int | None) -> dict[str, Any]:
    """One merge pass in this process; peak RSS above the RSS before it (ru_maxrss)."""
    lake = bare_lake(LocalStore(root))
    state = SearchState.from_extra(lake.snapshot(TENANT).extra)
    assert state is not None
    before_mb = rss_mb()
    cpu0, t0 = time.process_time(), time.perf_counter()
    report = merge_shards(lake, TENANT, rules=MergeRules.for_tier(top), limit=limit)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    after = SearchState.from_extra(lake.snapshot(TENANT).extra)
    assert after is not None
    gone = {s.key for s in state.shards} - {s.key for s in after.shards}
    in_mb = sum(s.bytes for s in state.shards if s.key in gone) / 1e6
    new = [s for s in after.shards if s.key not in {x.key for x in state.shards}]
    return {
        "merges": report.merged,
        "shards_in": report.shards_in,
        "docs": report.docs,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "rss_before_MB": before_mb,
        "peak_rss_MB": peak_mb,
        "peak_above_start_MB": peak_mb - before_mb,
        "input_MB": round(in_mb, 1),
        "output_MB": round(sum(s.bytes for s in new) / 1e6, 1),
        "s_per_input_MB": round(wall / in_mb, 4) if in_mb else None,
        **shards_of(root),
    }


def run_search(root: Path, queries: int) -> dict[str, Any]:
    meta = json.loads((root / "bench.json").read_text())
    ids, texts = meta["ids"], meta["texts"]
    qvecs, truth = np.load(root / "queries.npy"), np.load(root / "truth.npy")
    lake = bare_lake(LocalStore(root))
    svc = Searcher(Settings(), embedder=GivenVectors(), cache_bytes=16 << 30)  # type: ignore[arg-type]
    n = min(queries, len(texts))

    def one(i: int, params: SearchParams | None = None) -> list[str]:
        hits = search(
            lake, svc, TENANT, query=texts[i], limit=10, recency=False, query_vector=qvecs[i],
            **({"params": params} if params is not None else {}),
        )  # fmt: skip
        return [h.id for h in hits]

    for i in range(WARMUP):
        one(i)
        one(i, VEC_ONLY)
    hybrid, only, recalls = [], [], []
    for _ in range(2):  # the second pass is measured: every list it probes was added before
        hybrid, only, recalls = [], [], []
        for i in range(n):
            t0 = time.perf_counter()
            one(i)
            hybrid.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            got = one(i, VEC_ONLY)
            only.append((time.perf_counter() - t0) * 1000)
            recalls.append(len({ids[e] for e in truth[i].tolist()} & set(got)) / 10)
    return {
        **shards_of(root),
        "vec_only_p50_ms": round(statistics.median(only), 2),
        "vec_recall@10": round(statistics.mean(recalls), 4),
        "hybrid_p50_ms": round(statistics.median(hybrid), 2),
        "hybrid_p95_ms": round(pct(hybrid, 95), 2),
        **scale_bench.cold(lambda: LocalStore(root), MiniLMEmbedder.shared(), texts, COLD_RUNS),
    }


def in_subprocess(*args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, *args], check=True, capture_output=True, text=True
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["build", "merge", "search", "all"])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--episodes", type=int, default=32768)
    parser.add_argument("--per", type=int, default=scale_tenant.PER)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--top", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    if args.command == "build":
        print(json.dumps(build(args.dir, args.episodes, args.per, args.queries)))
    elif args.command == "merge":
        print(json.dumps(merge(args.dir, args.top, args.limit)))
    elif args.command == "search":
        print(json.dumps(run_search(args.dir, args.queries)))
    else:
        rows = {"build": in_subprocess("build", str(args.dir), "--episodes", str(args.episodes))}
        print("build", rows["build"], flush=True)
        rows["before"] = in_subprocess("search", str(args.dir))
        print("before", rows["before"], flush=True)
        extra = ["--limit", str(args.limit)] if args.limit else []
        rows["merge"] = in_subprocess("merge", str(args.dir), "--top", str(args.top), *extra)
        print("merge", rows["merge"], flush=True)
        rows["after"] = in_subprocess("search", str(args.dir))
        print("after", rows["after"], flush=True)
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
