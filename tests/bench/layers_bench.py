"""Memory-layer tool latency on the local lake as a tenant grows.

    OMP_NUM_THREADS=1 python tests/bench/layers_bench.py [--sizes 1000 10000] [--ops 200]

For each size N: a fresh local lake with N threads (10 messages each, half of them pending),
N episodes (ADR-007 fields), N/10 concepts and 3N episode-concept links, committed in batches
and compacted as the server's maintenance leaves a lake. Then each tool is called --ops times
through the tool layer (what /mcp runs after JSON parsing), in one process with a warm cache,
writes interleaved with reads as an agent's workflow does, compacting (untimed) whenever a
table reaches 32 segments as `memlake serve`'s maintenance does. No embedding work (the lake
has no search hooks): this is the layers' own cost.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from memlake.config import Settings
from memlake.context import Principal
from memlake.ids import new_id
from memlake.lake import Lake, Transaction
from memlake.lake.compaction import compact
from memlake.layers.tables import (
    CONCEPTS,
    LINKS,
    MESSAGES,
    THREADS,
    link_id,
    message_id,
)
from memlake.store.local import LocalStore
from memlake.tools.registry import get_tool
from tests.wiring import bare_lake, tool_context

TENANT = "bench"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def commit_rows(lake: Lake, table: str, rows: list[dict[str, Any]], batch: int = 5000) -> None:
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]

        def change(txn: Transaction, chunk: list[dict[str, Any]] = chunk) -> None:
            for row in chunk:
                txn.put(table, row)

        lake.commit(TENANT, change)


def fill(lake: Lake, n: int) -> dict[str, list[str]]:
    rng = random.Random(n)
    threads, messages, episodes, links = [], [], [], []
    for i in range(n):
        tid, at = new_id(), T0 + timedelta(minutes=i)
        status = "pending" if i % 2 else "completed"
        threads.append(
            {
                "id": tid,
                "title": f"thread {i}",
                "context": f"ctx{i % 5}",
                "processing_status": status,
                "message_count": 10,
                "created_at": at,
                "updated_at": at,
            }
        )
        for seq in range(10):
            role = "user" if seq % 2 == 0 else "assistant"
            content = f"message {seq} of thread {i}: " + "words " * 40
            messages.append(
                {
                    "id": message_id(tid, seq),
                    "thread_id": tid,
                    "seq": seq,
                    "role": role,
                    "content": content,
                    "at": at,
                }
            )
        episodes.append(
            {
                "id": new_id(),
                "content": f"## 10:00 episode {i}\n" + "narration " * 300,
                "title": f"episode {i}",
                "context": f"ctx{i % 5}",
                "platform": rng.choice(["claude", "chatgpt", "gemini"]),
                "tags": rng.sample(["work", "home", "lake", "db", "ops", "ml"], 2),
                "created_at": at,
                "started_at": at,
                "revision": 1,
            }
        )
    concepts = [
        {"id": new_id(), "name": f"concept {i}", "kind": "technology", "created_at": T0}
        for i in range(max(1, n // 10))
    ]
    seen = set()
    while len(links) < 3 * n:
        e, c = rng.choice(episodes)["id"], rng.choice(concepts)["id"]
        if (e, c) not in seen:
            seen.add((e, c))
            links.append(
                {
                    "id": link_id(c, e),
                    "concept_id": c,
                    "episode_id": e,
                    "position": 0,
                    "confidence": 1.0,
                    "created_at": T0,
                }
            )
    for table, rows in [
        (THREADS, threads),
        (MESSAGES, messages),
        ("episodes", episodes),
        (CONCEPTS, concepts),
        (LINKS, links),
    ]:
        commit_rows(lake, table, rows)
    compact(lake, TENANT, min_segments=2)
    return {
        "pending": [t["id"] for t in threads if t["processing_status"] == "pending"],
        "threads": [t["id"] for t in threads],
        "episodes": [e["id"] for e in episodes],
        "concepts": [c["id"] for c in concepts],
    }


def bench_size(n: int, ops: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix=f"memlake-layers-{n}-"))
    lake = bare_lake(LocalStore(root))
    started = time.perf_counter()
    ids = fill(lake, n)
    fill_s = time.perf_counter() - started
    os.sync()  # flush the fill's dirty pages so they do not slow the timed commits' fsyncs
    ctx = tool_context(Principal(TENANT, "bench"), lake, Settings())
    rng = random.Random(7)

    def call(tool: str, **args: Any) -> Any:
        spec = get_tool(tool)
        assert spec is not None
        return spec.run(ctx, spec.input_model.model_validate(args))

    pending = list(ids["pending"])
    cases: dict[str, Callable[[int], Any]] = {
        "get_pending_threads": lambda i: call("get_pending_threads", limit=10),
        "claim (mark_thread_status)": lambda i: call(
            "mark_thread_status", id=pending.pop(), status="processing"
        ),
        "get_thread (10 msgs)": lambda i: call("get_thread", id=rng.choice(ids["threads"])),
        "append_thread_messages (1)": lambda i: call(
            "append_thread_messages",
            thread_id=rng.choice(ids["threads"]),
            messages=[{"role": "user", "content": "one more thing " * 20}],
        ),
        "upsert_episode (update)": lambda i: call(
            "upsert_episode", id=rng.choice(ids["episodes"]), tags=["bench", str(i)]
        ),
        "link_episode_to_concept": lambda i: call(
            "link_episode_to_concept",
            episode_id=rng.choice(ids["episodes"]),
            concept_id=rng.choice(ids["concepts"]),
        ),
        "get_episode (include_entities)": lambda i: call(
            "get_episode", id=rng.choice(ids["episodes"]), include_entities=True
        ),
        "get_concept": lambda i: call("get_concept", id=rng.choice(ids["concepts"])),
        "find_episodes (platform+tags)": lambda i: call(
            "find_episodes", platform="claude", tags=["lake"], limit=20
        ),
        "find_concepts (query)": lambda i: call("find_concepts", query="concept 1", limit=20),
    }
    timings: dict[str, list[float]] = {name: [] for name in cases}
    for i in range(ops):  # interleaved: every write makes the next read see a new snapshot
        for name, fn in cases.items():
            t = time.perf_counter()
            fn(i)
            timings[name].append((time.perf_counter() - t) * 1000)
        # untimed, as `memlake serve`'s maintenance does: compact once a table has 32 segments
        if any(len(s) >= 32 for s in lake.snapshot(TENANT).manifest.tables.values()):
            compact(lake, TENANT, min_segments=16)
    return {
        "size": n,
        "fill_s": round(fill_s, 1),
        "ops": ops,
        "ms": {
            name: {
                "p50": round(statistics.median(v), 2),
                "p95": round(pct(v, 95), 2),
            }
            for name, v in timings.items()
        },
    }


def use_live_table_lookups() -> None:
    """The lookups before decision 0504 (live table, id index), for a side-by-side run."""
    from memlake.lake.scans import Scans
    from memlake.layers import threads

    def scan_live(view: Any, column: str, values: list[str], extra: Any = None) -> dict:
        live = view.live_table()
        mask = pc.is_in(live.column(column), value_set=pa.array(values, pa.string()))
        if extra is not None:
            mask = pc.and_(mask, extra(live))
        return {r["id"]: r for r in live.filter(mask).to_pylist()}

    def read_messages(snap: Any, thread: dict, offset: int, limit: int) -> list:
        end = min(thread.get("message_count") or 0, offset + limit)
        ids = [message_id(thread["id"], s) for s in range(offset, end)]
        return snap.table(MESSAGES).rows(ids)

    Scans.scan = scan_live  # type: ignore[method-assign,assignment]
    Transaction.find = Transaction.get  # type: ignore[method-assign]
    threads.read_messages = read_messages  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument(
        "--live-table-lookups", action="store_true", help="baseline: lookups before 0504"
    )
    args = parser.parse_args()
    if args.live_table_lookups:
        use_live_table_lookups()
    for n in args.sizes:
        print(json.dumps(bench_size(n, args.ops), indent=1), flush=True)


if __name__ == "__main__":
    main()
