"""Arrow's allocator, system (glibc malloc) against the bundled mimalloc, side by side in one
process (decision 4703): blocks of add_episode, search_episodes and list_episodes through the
tools, the pool switched between blocks (pyarrow.set_memory_pool), on one tenant.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/arrow_pool_bench.py \\
        [--episodes 2000] [--rounds 6]

Prints each pool's medians (ms) over all its blocks. Memory is the soak's to measure
(soak_bench.py): this bench is about time.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.context import Principal  # noqa: E402
from memlake.mcp.dispatch import call_tool  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from tests.bench.soak_bench import WORDS, QuietHash  # noqa: E402
from tests.wiring import bare_lake, indexed_context  # noqa: E402

POOLS = {"system": pa.system_memory_pool, "mimalloc": pa.mimalloc_memory_pool}


def timed(ctx: Any, name: str, **arguments: Any) -> float:
    t0 = time.perf_counter()
    outcome = call_tool({"name": name, "arguments": arguments}, ctx)
    assert not outcome.is_error, outcome.error
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memlake-pool-"))
    embedder, rng = QuietHash(), random.Random(4703)
    lake = bare_lake(LocalStore(root), dim=embedder.dim, cache_bytes=256 << 20)
    settings = Settings(data_dir=root, cache_bytes=256 << 20, shard_cache_bytes=256 << 20)
    ctx = indexed_context(Principal("pool"), lake, settings, embedder)
    for _ in range(args.episodes):
        call_tool(
            {"name": "add_episode", "arguments": {"content": " ".join(rng.choices(WORDS, k=12))}},
            ctx,
        )
    times: dict[str, dict[str, list[float]]] = {p: {} for p in POOLS}
    for r in range(args.rounds):
        for pool in POOLS if r % 2 == 0 else reversed(POOLS):
            pa.set_memory_pool(POOLS[pool]())
            got = times[pool]
            for _ in range(20):
                text = " ".join(rng.choices(WORDS, k=12))
                got.setdefault("add_episode", []).append(timed(ctx, "add_episode", content=text))
            for _ in range(100):
                query = " ".join(rng.choices(WORDS, k=3))
                got.setdefault("search_episodes", []).append(
                    timed(ctx, "search_episodes", query=query, limit=10)
                )
            for _ in range(10):
                got.setdefault("list_episodes", []).append(timed(ctx, "list_episodes", limit=20))
    for pool, got in times.items():
        print(pool, {name: round(statistics.median(ms), 2) for name, ms in got.items()})
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
