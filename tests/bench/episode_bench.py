"""add_episode / get_episode latency and object-store requests on the local lake.

    OMP_NUM_THREADS=1 python tests/bench/episode_bench.py [--sizes 1000 10000] [--ops 300]

For each size N: fill a fresh lake with N episodes (~4 KB each, committed in batches and
compacted, as a long-running server's maintenance leaves it), then time add_episode and
get_episode through the tool layer (what /mcp runs after JSON parsing) and through the full
HTTP transport on loopback, and count object-store requests per operation. No embedding work:
this is the storage engine's cost.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script: tests.support

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.ids import new_id
from memlake.lake import Lake, Transaction
from memlake.lake.compaction import compact
from memlake.mcp.server import Maintenance, build_app
from memlake.store.local import LocalStore
from memlake.tools import add_episode, get_episode
from tests.support.counting import CountingStore
from tests.wiring import bare_lake, services_for

WORDS = [
    "the",
    "a",
    "we",
    "agreed",
    "to",
    "ship",
    "parquet",
    "lake",
    "memory",
    "agent",
    "search",
    "vector",
    "index",
    "shard",
]


def text(n_words: int = 650) -> str:
    return " ".join(random.choice(WORDS) for _ in range(n_words))


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def fill(lake: Lake, tenant: str, n: int) -> list[str]:
    ids: list[str] = []
    for start in range(0, n, 500):
        batch = [new_id() for _ in range(min(500, n - start))]

        def change(txn: Transaction, batch: list[str] = batch) -> None:
            for i in batch:
                now = datetime.now(UTC)
                txn.put("episodes", {"id": i, "content": text(), "created_at": now})

        lake.commit(tenant, change)
        ids += batch
    compact(lake, tenant, min_segments=2)
    return ids


def bench_size(n: int, ops: int) -> dict[str, object]:
    root = Path(tempfile.mkdtemp(prefix=f"memlake-bench-{n}-"))
    store = CountingStore(LocalStore(root))
    settings = Settings(data_dir=root)
    services = services_for(bare_lake(store), settings)
    ctx = ToolContext(Principal("bench"), services)
    ids = fill(services.lake, "bench", n)
    maintenance = Maintenance(services)

    add_ms, add_writes, add_requests = [], [], []
    for i in range(ops):
        args = add_episode.AddEpisodeInput(content=text(), context="bench")
        store.reset()
        t0 = time.perf_counter()
        out = add_episode.run(ctx, args)
        add_ms.append((time.perf_counter() - t0) * 1000)
        add_writes.append(store.writes)
        add_requests.append(sum(store.counts.values()))
        ids.append(out.id)
        if i % 32 == 31:
            maintenance.tick()  # what the server's background thread does

    get_ms, get_requests = [], []
    for _ in range(ops):
        args = get_episode.GetEpisodeInput(id=random.choice(ids))
        store.reset()
        t0 = time.perf_counter()
        get_episode.run(ctx, args)
        get_ms.append((time.perf_counter() - t0) * 1000)
        get_requests.append(sum(store.counts.values()))

    # the same two calls through the whole HTTP transport on loopback
    from tests.e2e.mcp_helpers import serve_in_thread

    http_add, http_get = [], []
    with serve_in_thread(build_app(services, host="127.0.0.1")) as url, httpx.Client() as http:
        headers = {"content-type": "application/json", "accept": "application/json"}
        for i in range(ops):
            body = {"jsonrpc": "2.0", "id": i, "method": "tools/call"}
            body["params"] = {"name": "add_episode", "arguments": {"content": text()}}
            t0 = time.perf_counter()
            resp = http.post(url, content=json.dumps(body), headers=headers)
            http_add.append((time.perf_counter() - t0) * 1000)
            assert not resp.json()["result"]["isError"]
            body["params"] = {"name": "get_episode", "arguments": {"id": random.choice(ids)}}
            t0 = time.perf_counter()
            resp = http.post(url, content=json.dumps(body), headers=headers)
            http_get.append((time.perf_counter() - t0) * 1000)
            if i % 32 == 31:
                maintenance.tick()

    return {
        "episodes": n,
        "add_p50_ms": round(statistics.median(add_ms), 2),
        "add_p95_ms": round(pct(add_ms, 95), 2),
        "add_writes_max": max(add_writes),
        "add_requests_p50": statistics.median(add_requests),
        "get_p50_ms": round(statistics.median(get_ms), 3),
        "get_p95_ms": round(pct(get_ms, 95), 3),
        "get_requests_p50": statistics.median(get_requests),
        "http_add_p50_ms": round(statistics.median(http_add), 2),
        "http_get_p50_ms": round(statistics.median(http_get), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--ops", type=int, default=300)
    args = parser.parse_args()
    random.seed(7)
    rows = [bench_size(n, args.ops) for n in args.sizes]
    cols = list(rows[0])
    print(" | ".join(cols))
    for row in rows:
        print(" | ".join(str(row[c]) for c in cols))


if __name__ == "__main__":
    main()
