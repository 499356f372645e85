"""What an erasure costs at scale (issue 48): a tenant of N episodes x 20 passage vectors in
the layout the server reaches (tests/bench/scale_tenant.py), compacted as maintenance leaves
it, then rounds of delete_episode's change on K random episodes followed by the erasure pass
(memlake.erasure.run.erase_pending), on local disk and on the S3 timing model
(memlake.store.latency over the same directory).

Reported per K: the pass's seconds (median of the rounds), store requests and sequential round
trips (S3 model), objects rewritten and removed against the tenant's objects, rows and the
shard bytes rewritten against all shard bytes: an erasure rewrites only what held the
episodes, never the tenant.

    OMP_NUM_THREADS=1 PYTHONPATH=shared:. .venv/bin/python tests/bench/erasure_bench.py \\
        --episodes 10000 --deletes 1 10 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from memlake.config import Settings
from memlake.config_values import parse_latency
from memlake.erasure import requests
from memlake.erasure.run import erase_pending
from memlake.lake import Lake, Transaction
from memlake.lake.compaction import compact
from memlake.search import indexing
from memlake.search.index.state import SearchState
from memlake.search.searcher import Searcher
from memlake.store.latency import LatencyModel, LatencyStore
from memlake.store.local import LocalStore
from tests.bench import scale_tenant
from tests.wiring import CATALOG, services_for

DIM = 384
TENANT = scale_tenant.TENANT


class NoEmbedder:
    """Deletes embed nothing: a model name and width for the index's hooks."""

    def __init__(self, name: str) -> None:
        self.name, self.dim, self.max_tokens = name, DIM, 128

    def embed(self, texts: Any) -> np.ndarray:
        raise AssertionError("an erasure must not embed")


def unit_rows(seed: int, episodes: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((episodes * scale_tenant.PER, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def lake_on(store: Any, model: str) -> Lake:
    lake = Lake(store, tables=CATALOG, dim=DIM)
    searcher = Searcher(Settings(), embedder=NoEmbedder(model))  # type: ignore[arg-type]
    indexing.install(lake, searcher)  # a delete marks the episode dead in its shard
    return lake


def delete_some(lake: Lake, ids: list[str]) -> None:
    cleanups = services_for(lake).on_episode_delete

    def change(txn: Transaction) -> None:
        for episode_id in ids:
            txn.delete("episodes", episode_id)
            for cleanup in cleanups:
                cleanup(txn, episode_id)

    lake.commit(TENANT, change)


def objects(store: Any) -> tuple[int, int]:
    found = list(store.list(f"tenants/{TENANT}/"))
    return len(found), sum(o.size for o in found)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--deletes", type=int, nargs="+", default=[1, 10])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--latency", default="25ms,90MB/s", help="the S3 model's timing")
    ap.add_argument("--stores", nargs="+", default=["local", "s3-model"])
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memlake-erasure-"))
    model = "bench-random"
    t0 = time.perf_counter()
    tenant = scale_tenant.build(
        Lake(LocalStore(root), tables=CATALOG, dim=DIM), root, args.episodes, model,
        lambda no, docs: unit_rows(1000 + no, docs), np.zeros((1, DIM), np.float32),
    )  # fmt: skip
    local = lake_on(LocalStore(root), model)
    compact(local, TENANT, min_segments=2)
    print(f"built {args.episodes} episodes in {time.perf_counter() - t0:.0f} s", flush=True)
    rng = np.random.default_rng(7)
    alive = list(tenant.ids)
    delay, bandwidth = parse_latency(args.latency)
    print("store | K | pass s (median) | requests | round trips | rewritten | removed | objects"
          " | shard MB rewritten / all")  # fmt: skip
    for where in args.stores:
        for k in args.deletes:
            runs: list[dict[str, float]] = []
            for _ in range(args.rounds):
                picked = [alive.pop(int(rng.integers(len(alive)))) for _ in range(k)]
                inner = LocalStore(root)
                store: Any = inner
                if where == "s3-model":
                    timing = LatencyModel(first_byte=delay, bandwidth=bandwidth or 90e6)
                    store = LatencyStore(inner, timing)
                lake = lake_on(store, model)
                delete_some(lake, picked)
                state = SearchState.from_extra(lake.snapshot(TENANT).extra)
                assert state is not None
                shard_bytes = sum(s.bytes for s in state.shards)
                if isinstance(store, LatencyStore):
                    store.reset()
                count, _ = objects(inner)
                t = time.perf_counter()
                report = erase_pending(lake, TENANT)
                took = time.perf_counter() - t
                assert report.erased == k, report
                after = SearchState.from_extra(lake.snapshot(TENANT).extra)
                assert after is not None
                rebuilt = {s.key for s in after.shards} - {s.key for s in state.shards}
                runs.append({
                    "s": took, "rewritten": report.rewritten, "removed": report.removed,
                    "objects": count, "rows": report.rows,
                    "requests": store.stats.requests if isinstance(store, LatencyStore) else 0,
                    "depth": store.stats.depth if isinstance(store, LatencyStore) else 0,
                    "shard_mb": sum(s.bytes for s in after.shards if s.key in rebuilt) / 1e6,
                    "all_mb": shard_bytes / 1e6,
                })  # fmt: skip
                assert not requests.pending(lake.snapshot(TENANT))
            med = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
            print(
                f"{where} | {k} | {med['s']:.2f} | {med['requests']:.0f} | {med['depth']:.0f}"
                f" | {med['rewritten']:.0f} | {med['removed']:.0f} | {med['objects']:.0f}"
                f" | {med['shard_mb']:.1f} / {med['all_mb']:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
