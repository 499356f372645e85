"""A soak (issue 47): mixed load on one tenant for --minutes, through the tools as an MCP client
calls them, on a store that injects S3's everyday faults, with maintenance (compaction,
folds, the deferred pass, GC) on a schedule; then an audit of every acknowledged write.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/soak_bench.py \\
        [--minutes 30] [--fault-rate 0.01] [--embedder hash|minilm] [--cache-mb 256] [--root DIR]
        [--steady N]

Threads: 2 writers (add_episode; the first's every 8th call an upsert_episode of one of its
own: a new version), a deleter (delete_episode of one the second writer added), 2 searchers
(search_episodes of a word of an acknowledged write), a graph worker (add_episode_relationship
`follows` between two acknowledged episodes, validate_no_cycles, get_dependency_graph) and
maintenance every 20 s (memlake.maintenance's "tick" policy, GC with a 60 s grace and a
5-minute history window for 7 days'). Every request to the store fails with probability
--fault-rate, half before the store saw it, half after it did (the answer lost: decision
4701's case).

With --steady N the writers delete their oldest episodes once the tenant holds about N, so
after the warm-up the tenant's size holds still (a long-running server's state) and memory
and latency over time say whether anything accumulates.

Each minute it prints resident memory and each tool's p50/p99 in that minute; at the end
it reads the lake again without faults: every acknowledged add present once with its last
acknowledged content, every acknowledged delete gone, every write that answered an error
absent (an error for a write that landed is counted), and the relationships acknowledged.
Not in CI: its numbers go to docs/performance.md ("Soak").
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict, deque
from dataclasses import replace
from pathlib import Path
from typing import Any

# isort: off
import memlake  # noqa: F401  first, as a server does: it picks Arrow's allocator (decision 4703)
import pyarrow as pa

# isort: on

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.context import Principal  # noqa: E402
from memlake.errors import StorageError  # noqa: E402
from memlake.maintenance import maintenance_policy, run_maintenance  # noqa: E402
from memlake.mcp.dispatch import call_tool  # noqa: E402
from memlake.store.faults import Fault, FaultyStore  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from tests.integration.test_search_index import HashEmbedder  # noqa: E402
from tests.wiring import bare_lake, indexed_context  # noqa: E402

T = "soak"
#: GC's history window, compressed as the soak compresses time (a server keeps 7 days: at
#: the soak's write rate the window would never slide, and the store only grow)
HISTORY_SECONDS = 300.0
WORDS = [
    "harbour",
    "tide",
    "gauge",
    "ferry",
    "lantern",
    "quay",
    "anchor",
    "beacon",
    "dredge",
    "pilot",
    "mooring",
]


class QuietHash(HashEmbedder):
    """HashEmbedder without its record of every text (it would grow for the whole soak)."""

    def embed(self, texts: Any) -> Any:
        out = super().embed(texts)
        self.texts.clear()
        return out


class RandomFaults(FaultyStore):
    """Every request fails with probability `rate`: before the store saw it, or after."""

    def __init__(self, inner: Any, rate: float, seed: int) -> None:
        super().__init__(inner, [])
        self.rate, self.rng = rate, random.Random(seed)

    def _take(self, op: str, key: str) -> Fault | None:
        with self._lock:
            if self.rng.random() >= self.rate:
                return None
            when = "before" if self.rng.random() < 0.5 else "after"
            self.fired[(op, when)] += 1
            return Fault(op, when=when)  # type: ignore[arg-type]


class Ledger:
    """What the tools acknowledged (and what they answered an error for)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.content: dict[str, str] = {}  # id -> last acknowledged content
        self.deleted: set[str] = set()
        self.failed_adds: list[str] = []  # contents of adds that answered an error
        self.links: set[tuple[str, str]] = set()
        self.owner: dict[str, int] = {}  # id -> the writer that added it
        self.order: dict[int, deque[str]] = defaultdict(deque)  # writer -> its adds, oldest first
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)

    def live(self, rng: random.Random, owner: int | None = None) -> str | None:
        """A live acknowledged episode (of writer `owner`'s, when given)."""
        with self.lock:
            ids = [
                i
                for i in self.content
                if i not in self.deleted and (owner is None or self.owner.get(i) == owner)
            ]
        return rng.choice(ids) if ids else None


def _call(ctx: Any, ledger: Ledger, name: str, **arguments: Any) -> Any:
    t0 = time.perf_counter()
    outcome = call_tool({"name": name, "arguments": arguments}, ctx)
    ms = (time.perf_counter() - t0) * 1000
    with ledger.lock:
        ledger.times[name].append(ms)
        if outcome.is_error:
            ledger.errors[name] += 1
            code = outcome.error.code if outcome.error is not None else "?"
            ledger.errors[f"{name}:{code}"] += 1  # which error: faults, races, erasures
    return outcome


def writer(ctx: Any, ledger: Ledger, stop: threading.Event, seed: int, steady: int = 0) -> None:
    rng, n = random.Random(seed), 0
    while not stop.is_set():
        n += 1
        text = f"w{seed}x{n} " + " ".join(rng.choices(WORDS, k=12))
        # writer 1 upserts its own episodes, the deleter deletes writer 2's: a delete and an
        # upsert of one episode never race, so the audit knows which one is last
        mine = ledger.live(rng, owner=seed) if seed == 1 else None
        if n % 8 == 0 and mine is not None:
            out = _call(ctx, ledger, "upsert_episode", id=mine, events=text, context="soak")
            if not out.is_error:
                with ledger.lock:
                    if mine not in ledger.deleted:
                        ledger.content[mine] = text
            continue
        out = _call(ctx, ledger, "add_episode", content=text, context="soak")
        with ledger.lock:
            if out.is_error:
                ledger.failed_adds.append(text)
            else:
                ledger.content[out.structured["id"]] = text
                ledger.owner[out.structured["id"]] = seed
                ledger.order[seed].append(out.structured["id"])
        if steady:
            forget_oldest(ctx, ledger, seed, steady // 2)


def forget_oldest(ctx: Any, ledger: Ledger, seed: int, keep: int) -> None:
    """--steady: delete this writer's oldest live episode while it holds more than `keep` (its
    own thread: never racing its own upserts). An error leaves it live (decision 4701: an
    error is a write that did not land) and first in line."""
    with ledger.lock:
        mine = ledger.order[seed]
        while mine and mine[0] in ledger.deleted:
            mine.popleft()
        if len(mine) <= keep:
            return
        victim = mine.popleft()
    if _call(ctx, ledger, "delete_episode", id=victim).is_error:
        with ledger.lock:
            ledger.order[seed].appendleft(victim)
    else:
        with ledger.lock:
            ledger.deleted.add(victim)


def deleter(ctx: Any, ledger: Ledger, stop: threading.Event) -> None:
    rng = random.Random(7)
    while not stop.wait(0.5):
        victim = ledger.live(rng, owner=2)
        if victim is not None and not _call(ctx, ledger, "delete_episode", id=victim).is_error:
            with ledger.lock:
                ledger.deleted.add(victim)


def searcher(ctx: Any, ledger: Ledger, stop: threading.Event, seed: int) -> None:
    rng = random.Random(seed)
    while not stop.is_set():
        _call(ctx, ledger, "search_episodes", query=" ".join(rng.choices(WORDS, k=3)), limit=10)


def grapher(ctx: Any, ledger: Ledger, stop: threading.Event) -> None:
    rng = random.Random(11)
    while not stop.wait(0.2):
        a, b = ledger.live(rng), ledger.live(rng)
        if a is None or b is None or a >= b:
            continue
        out = _call(
            ctx, ledger, "add_episode_relationship", from_episode_id=a, to_episode_id=b,
            relationship_type="follows",
        )  # fmt: skip
        if not out.is_error:
            with ledger.lock:
                ledger.links.add((a, b))
        _call(
            ctx, ledger, "validate_no_cycles", from_episode_id=b, to_episode_id=a,
            relationship_type="follows",
        )  # fmt: skip
        _call(ctx, ledger, "get_dependency_graph", episode_ids=[a])


def maintainer(ctx: Any, ledger: Ledger, stop: threading.Event) -> None:
    policy = replace(
        maintenance_policy(ctx.services.settings, "tick"),
        gc_grace_seconds=60.0,
        gc_history_seconds=HISTORY_SECONDS,
    )
    while not stop.wait(20):
        t0 = time.perf_counter()
        try:
            run_maintenance(ctx.services, policy, tenants=[T])
        except StorageError:
            ledger.errors["maintenance"] += 1
        with ledger.lock:
            ledger.times["maintenance"].append((time.perf_counter() - t0) * 1000)


def _rss_mb(kind: str = "VmRSS") -> float:
    """Resident memory (VmRSS), or its anonymous part (RssAnon: the heap, not mapped files)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(kind + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def audit(root: Path, ledger: Ledger) -> dict[str, Any]:
    view = bare_lake(LocalStore(root), dim=64).snapshot(T).table("episodes")
    rows = {i: view.get(i) for i in view.ids()}
    by_text: dict[str, int] = defaultdict(int)
    for row in rows.values():
        if row is not None:
            by_text[str(row.get("content"))] += 1
    lost = [i for i, c in ledger.content.items() if i not in ledger.deleted and i not in rows]
    stale = [
        i
        for i, c in ledger.content.items()
        if i not in ledger.deleted and i in rows and (rows[i] or {}).get("content") != c
    ]
    return {
        "acknowledged_adds": len(ledger.content),
        "acknowledged_deletes": len(ledger.deleted),
        "lost": len(lost),
        "not_the_last_content": len(stale),
        "deleted_but_present": len([i for i in ledger.deleted if i in rows]),
        "duplicated": sum(1 for n in by_text.values() if n > 1),
        "errors_for_writes_that_landed": sum(1 for t in ledger.failed_adds if by_text.get(t)),
        "errored_adds": len(ledger.failed_adds),
        "relationships_acknowledged": len(ledger.links),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--fault-rate", type=float, default=0.01)
    parser.add_argument("--embedder", choices=["hash", "minilm"], default="hash")
    parser.add_argument("--root", type=Path)
    parser.add_argument("--cache-mb", type=int, default=256)
    parser.add_argument(
        "--steady",
        type=int,
        default=0,
        help="keep the tenant at about this many live episodes (writers delete their oldest)",
    )
    args = parser.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="memlake-soak-"))
    if args.embedder == "minilm":
        from memlake.embed.minilm import MiniLMEmbedder

        embedder: Any = MiniLMEmbedder.shared()
    else:
        embedder = QuietHash()
    store = RandomFaults(LocalStore(root), args.fault_rate, seed=47)
    cache = args.cache_mb << 20  # each of the segment and the shard caches: a Lambda's size
    lake = bare_lake(store, dim=embedder.dim, cache_bytes=cache)
    settings = Settings(data_dir=root, cache_bytes=cache, shard_cache_bytes=cache)
    ctx = indexed_context(Principal(T), lake, settings, embedder)
    ledger, stop = Ledger(), threading.Event()
    workers = [
        threading.Thread(target=writer, args=(ctx, ledger, stop, s, args.steady)) for s in (1, 2)
    ] + [threading.Thread(target=searcher, args=(ctx, ledger, stop, s)) for s in (3, 4)]
    workers += [
        threading.Thread(target=f, args=(ctx, ledger, stop)) for f in (deleter, grapher, maintainer)
    ]
    for w in workers:
        w.start()
    start, minute = time.monotonic(), 0
    try:
        while time.monotonic() - start < args.minutes * 60:
            time.sleep(60 if args.minutes >= 1 else args.minutes * 60)
            minute += 1
            with ledger.lock:
                window = {k: v[:] for k, v in ledger.times.items()}
                for v in ledger.times.values():
                    v.clear()
                errors = dict(ledger.errors)
            line: dict[str, Any] = {"minute": minute, "rss_mb": round(_rss_mb(), 1)}
            line["anon_mb"] = round(_rss_mb("RssAnon"), 1)
            line["threads"] = threading.active_count()
            line["live_episodes"] = len(ledger.content) - len(ledger.deleted)
            line["arrow_mb"] = round(pa.total_allocated_bytes() / 2**20, 1)
            line["segment_cache_mb"] = round(lake.cache.nbytes / 2**20, 1)
            line["shard_cache_mb"] = round(ctx.services.search.shards.nbytes / 2**20, 1)
            for name, ms in sorted(window.items()):
                ms.sort()
                p99 = ms[min(len(ms) - 1, int(0.99 * len(ms)))]
                line[name] = [len(ms), round(statistics.median(ms), 1), round(p99, 1)]
            line["errors"] = errors
            line["faults"] = sum(store.fired.values())
            print(json.dumps(line), flush=True)
    finally:
        stop.set()
        for w in workers:
            w.join()
    print("AUDIT " + json.dumps(audit(root, ledger)), flush=True)
    if args.root is None:  # a lake of its own: gone with it (--root keeps one to look at)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
