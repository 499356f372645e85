"""Cold and warm search on one stored lake, for comparing two versions of the code side by side.

    # once: build a lake of N episodes x C realistic vectors (search_bench's corpus)
    OMP_NUM_THREADS=1 python tests/bench/cold_bench.py build DIR --size 10000 --chunks 20
    # then per version (PYTHONPATH picks the memlake package measured):
    OMP_NUM_THREADS=1 PYTHONPATH=/work/main/shared python tests/bench/cold_bench.py run DIR
    OMP_NUM_THREADS=1 python tests/bench/cold_bench.py run DIR

`run` makes --cold searches, each in a fresh Lake and Searcher on the same local store (memory
caches empty; no /tmp cache), query vector given, and reports the p50 time, bytes read and
requests (CountingStore) of a cold search; then --warm searches in the last searcher (p50) and
the process's resident memory after them.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import memlake  # noqa: E402
from memlake.config import Settings  # noqa: E402
from memlake.context import Principal  # noqa: E402
from memlake.search.hybrid import search  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from tests.support.counting import CountingStore  # noqa: E402
from tests.wiring import bare_lake, indexed_context  # noqa: E402

TENANT = "bench"


def build(root: Path, size: int, chunks: int) -> None:
    from memlake.embed.minilm import MiniLMEmbedder
    from memlake.search import searcher
    from tests.bench import search_bench as sb

    embedder = MiniLMEmbedder.shared()
    corpus = sb.Corpus(size, chunks, embedder, "realistic")
    lake = bare_lake(LocalStore(root))
    searcher.EMBED_CACHE = size + 1000
    searcher.EMBED_CACHE_VECTORS = (size + 1000) * chunks
    ctx = indexed_context(Principal(TENANT), lake, Settings(data_dir=root), embedder)
    sb.fill(lake, ctx.services.search, corpus)
    np.save(root / "query_vectors.npy", np.asarray(corpus.query_vectors, np.float32))
    (root / "queries.json").write_text(json.dumps(corpus.queries))
    shards = lake.snapshot(TENANT).extra["search"]["shards"]
    print(json.dumps({"shards": len(shards), "bytes": sum(s["bytes"] for s in shards)}))


def run(root: Path, cold_n: int, warm_n: int) -> dict[str, Any]:
    from memlake.embed.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder.shared()
    queries = json.loads((root / "queries.json").read_text())
    qvecs = np.load(root / "query_vectors.npy")
    settings = Settings(data_dir=root)
    cold, reads, requests, ranged = [], [], [], []
    ctx: Any = None
    for i in range(cold_n):
        store = CountingStore(LocalStore(root))
        lake = bare_lake(store)
        ctx = indexed_context(Principal(TENANT), lake, settings, embedder)
        t0 = time.perf_counter()
        search(lake, ctx.services.search, TENANT, query=queries[i], limit=10, query_vector=qvecs[i])
        cold.append((time.perf_counter() - t0) * 1000)
        reads.append(store.bytes_read)
        requests.append(sum(store.counts.values()))
        ranged.append(store.counts["get_range"])
        t0 = time.perf_counter()
        ctx.services.search.shards.wait_promotions()  # not overlapping the next cold search
        lake.snapshot(TENANT).table("episodes").wait_index()  # nor the id index built after
        promote_s = time.perf_counter() - t0
    shards = ctx.lake.snapshot(TENANT).extra["search"]["shards"]
    vector_bytes = sum(s["chunks"] for s in shards) * 384 * 4
    warm = []
    for i in range(warm_n):
        q = i % len(queries)
        t0 = time.perf_counter()
        search(
            ctx.lake, ctx.services.search, TENANT, query=queries[q], limit=10, query_vector=qvecs[q]
        )
        warm.append((time.perf_counter() - t0) * 1000)
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * resource.getpagesize() // 1_000_000
    return {
        "code": str(Path(memlake.__file__).parents[1]),
        "cold_p50_ms": round(statistics.median(cold)),
        "cold_max_ms": round(max(cold)),
        "cold_MB_read": round(statistics.median(reads) / 1e6, 1),
        "of_vector_bytes": round(statistics.median(reads) / vector_bytes, 3),
        "cold_requests": statistics.median(requests),
        "cold_range_gets": statistics.median(ranged),
        "promotion_wait_s": round(promote_s, 1),
        "warm_p50_ms": round(statistics.median(warm), 1),
        "rss_MB": rss,
        "shards": len(shards),
        "shard_MB": round(sum(s["bytes"] for s in shards) / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["build", "run"])
    parser.add_argument("root", type=Path)
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--cold", type=int, default=5)
    parser.add_argument("--warm", type=int, default=100)
    parser.add_argument(
        "--no-promote", action="store_true", help="keep ranged shards ranged (cache.PROMOTE off)"
    )
    args = parser.parse_args()
    if args.mode == "build":
        args.root.mkdir(parents=True, exist_ok=True)
        build(args.root, args.size, args.chunks)
    else:
        if args.no_promote:
            from memlake.search.index import cache

            cache.PROMOTE = False
        print(json.dumps(run(args.root, args.cold, args.warm) | {"promote": not args.no_promote}))


if __name__ == "__main__":
    main()
