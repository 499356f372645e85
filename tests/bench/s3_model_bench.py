"""Cold search, warm search and add_episode on local disk and on the S3 model, side by side
(issue 44, decision 4401).

    # once: a tenant as first_share_bench builds it (truth.json for recall)
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/first_share_bench.py \
        build /tmp/t10k --size 10000
    # cold/warm/add, local and S3 model (25 ms first byte, 90 MB/s a request) in one run:
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/s3_model_bench.py \
        run /tmp/t10k [--cold 7] [--warm 60] [--adds 15] [--cache-mb 1024]
    # one cold search's requests by round trip (what waits on what):
    ... s3_model_bench.py trace /tmp/t10k
    # cold searches with ranged GETs split at each part size, alternating in one process:
    ... s3_model_bench.py parts /tmp/t10k --cold 9 [--part-kb 4096,2048,1024]
    # the re-score rows' coalescing gap (shard_source.ROWS_GAP), alternating in one process:
    ... s3_model_bench.py gaps /tmp/t10k --cold 9 [--gap-kb 256,512,1024]
    # a lever off and on, alternating in one process, local then S3 model each search:
    ... s3_model_bench.py levers /tmp/t10k --cold 24 --lever ahead|switch|decode|head
    # the same queries on tenants built apart (a layout lever), alternating, and their recall:
    ... s3_model_bench.py tenants /tmp/t10k --other /tmp/t10k-ord --cold 16
    # add_episode alone, on copies of the tenant (local, then the S3 model):
    ... s3_model_bench.py adds /tmp/t10k --adds 15
    # any mode with boto3's own CPU a request charged on the calling thread (decision 4401):
    ... s3_model_bench.py run /tmp/t10k --client-cpu-ms 1.8

`run` makes --cold searches, each in a fresh Lake and Searcher (memory caches empty, no /tmp
cache; query vector given, recency off), alternating local disk and the S3 model
(memlake.store.latency.LatencyStore over the same LocalStore), and reports per store the p50
time, requests, bytes, peak in flight and sequential depth; then --warm searches of new
queries in the last searcher of each kind, with a shard cache of --cache-mb (the Lambda's 256
MiB: --cache-mb 256), the shards promoted to whole ones after the first search when they fit
it and the episodes' id index built, as a server does; then --adds add_episode calls through the
tool (MiniLM embedding included) on a copy of the tenant. Vector-only recall@10 against the
exact top-10 (truth.json) is taken on the warm queries, after each timed hybrid search.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.context import Principal  # noqa: E402
from memlake.embed.minilm import MiniLMEmbedder  # noqa: E402
from memlake.lake import snapshot  # noqa: E402
from memlake.search.hybrid import search  # noqa: E402
from memlake.search.index import cache, ranges  # noqa: E402
from memlake.search.query.params import SearchParams  # noqa: E402
from memlake.search.searcher import Searcher  # noqa: E402
from memlake.store.latency import LatencyModel, LatencyStore  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from tests.bench import search_bench  # noqa: E402
from tests.wiring import bare_lake, indexed_context  # noqa: E402

TENANT = search_bench.TENANT


def _queries(root: Path) -> tuple[list[str], np.ndarray, list[list[str]]]:
    texts = json.loads((root / "texts.json").read_text())
    qvecs = np.load(root / "queries-real.npy")
    truth = json.loads((root / "truth.json").read_text())
    return texts, qvecs, truth


def _store(root: Path, modelled: bool, model: LatencyModel, trace: bool = False) -> Any:
    local = LocalStore(root)
    return LatencyStore(local, model, trace=trace) if modelled else _Counted(local)


class _Counted(LatencyStore):
    """The local store with the same counters and no added time."""

    def __init__(self, inner: LocalStore) -> None:
        super().__init__(inner, LatencyModel(first_byte=0.0, bandwidth=1e18))


VECTOR_ONLY = SearchParams(weights={"bm25": 0.0, "vector": 1.0})


def _one_search(
    lake: Any, searcher: Searcher, text: str, qvec: np.ndarray, params: Any = None
) -> list[str]:
    kw = {"params": params} if params is not None else {}
    hits = search(
        lake, searcher, TENANT, query=text, limit=10, recency=False, query_vector=qvec, **kw
    )
    return [h.id for h in hits]


def cold(root: Path, n: int, model: LatencyModel, cache_bytes: int) -> dict[str, Any]:
    texts, qvecs, _ = _queries(root)
    out: dict[str, dict[str, list[float]]] = {"local": defaultdict(list), "s3": defaultdict(list)}
    for i in range(n):
        for kind in ("local", "s3") if i % 2 == 0 else ("s3", "local"):
            store = _store(root, kind == "s3", model)
            lake = bare_lake(store)
            searcher = Searcher(Settings(data_dir=root), cache_bytes=cache_bytes)
            t0 = time.perf_counter()
            _one_search(lake, searcher, texts[i], qvecs[i])
            ms = (time.perf_counter() - t0) * 1000
            s = store.reset()
            row = out[kind]
            row["ms"].append(ms)
            row["requests"].append(s.requests)
            row["MB"].append(s.bytes_read / 1e6)
            row["peak_in_flight"].append(s.peak_in_flight)
            row["depth"].append(s.depth)
    return {
        kind: {f"{k}_p50": round(statistics.median(v), 1) for k, v in row.items()}
        for kind, row in out.items()
    }


def warm(root: Path, n: int, model: LatencyModel, cache_bytes: int) -> dict[str, Any]:
    texts, qvecs, truth = _queries(root)
    out: dict[str, Any] = {}
    for kind in ("local", "s3"):
        store = _store(root, kind == "s3", model)
        lake = bare_lake(store)
        searcher = Searcher(Settings(data_dir=root), cache_bytes=cache_bytes)
        # as a server: whole shards when the tenant fits the cache, the id index built
        cache.PROMOTE = snapshot.INDEX_AFTER_LOOKUP = True
        _one_search(lake, searcher, texts[0], qvecs[0])  # cold: not counted
        searcher.shards.wait_promotions()
        lake.snapshot(TENANT).table("episodes").wait_index()
        cache.PROMOTE = snapshot.INDEX_AFTER_LOOKUP = False
        promoted = not any(s.lazy for s in searcher.shards._items.values())
        times, reqs, hit = [], [], []
        for i in range(1, n + 1):
            store.reset()
            t0 = time.perf_counter()
            _one_search(lake, searcher, texts[i], qvecs[i])
            times.append((time.perf_counter() - t0) * 1000)
            reqs.append(store.stats.requests)
            ids = _one_search(lake, searcher, texts[i], qvecs[i], VECTOR_ONLY)
            hit.append(len(set(ids) & set(truth[i])) / 10)
        out[kind] = {
            "promoted": promoted,
            "ms_p50": round(statistics.median(times), 1),
            "requests_p50": statistics.median(reqs),
            "vector_recall_at_10": round(statistics.mean(hit), 3),
        }
    return out


def adds(root: Path, n: int, model: LatencyModel) -> dict[str, Any]:
    from memlake.tools import add_episode

    embedder = MiniLMEmbedder.shared()
    out: dict[str, Any] = {}
    for kind in ("local", "s3"):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "lake"
            shutil.copytree(root / "tenants", copy / "tenants")
            store = _store(copy, kind == "s3", model)
            lake = bare_lake(store)
            ctx = indexed_context(Principal(TENANT), lake, Settings(data_dir=copy), embedder)
            times, reqs, depth = [], [], []
            first: dict[str, Any] = {}
            for i in range(n + 1):
                text = search_bench.episode_text(10_000_000 + i * 7919 + (hash(kind) & 0xFF))
                store.reset()
                t0 = time.perf_counter()
                add_episode.run(ctx, add_episode.AddEpisodeInput(content=text, context="c1"))
                ms = (time.perf_counter() - t0) * 1000
                s = store.reset()  # the depth the answer waited for
                lake.settle_hint(TENANT)  # the hint's put, under way after the answer
                requests = s.requests + store.reset().requests
                if i:  # the first is a cold writer's: reported apart
                    times.append(ms)
                    reqs.append(requests)
                    depth.append(s.depth)
                else:
                    first = {"first_ms": round(ms, 1), "first_requests": requests}
                    first["first_depth"] = s.depth
            out[kind] = {
                "ms_p50": round(statistics.median(times), 1),
                "requests_p50": statistics.median(reqs),
                "depth_p50": statistics.median(depth),
                **first,
            }
    return out


def trace(root: Path, model: LatencyModel, cache_bytes: int) -> None:
    """One cold search's requests by depth, after an untraced one in another fresh searcher
    (a process's first search also loads kernels and starts pools)."""
    texts, qvecs, _ = _queries(root)
    first = Searcher(Settings(data_dir=root), cache_bytes=cache_bytes)
    _one_search(bare_lake(_store(root, True, model)), first, texts[2], qvecs[2])
    store = _store(root, True, model, trace=True)
    lake = bare_lake(store)
    searcher = Searcher(Settings(data_dir=root), cache_bytes=cache_bytes)
    t0 = time.perf_counter()
    _one_search(lake, searcher, texts[3], qvecs[3])
    took = (time.perf_counter() - t0) * 1000
    by_depth: dict[int, list[Any]] = defaultdict(list)
    members = _members(root, {r.key for r in store.trace if r.op == "get_range"})
    for r in store.trace:
        by_depth[r.depth].append(r)
    for depth in sorted(by_depth):
        reqs = by_depth[depth]
        kinds = Counter(f"{r.op}:{_kind(r.key, r, members)}" for r in reqs)
        start = min(r.start for r in reqs) * 1000
        print(
            f"depth {depth:3d} at {start:8.1f} ms: {len(reqs):4d} requests,"
            f" {sum(r.nbytes for r in reqs) / 1e3:9.1f} KB  {dict(kinds)}"
        )
    s = store.stats
    print(
        f"cold search {took:.0f} ms: {s.requests} requests {dict(s.counts)},"
        f" {s.bytes_read / 1e6:.1f} MB, peak {s.peak_in_flight} in flight, depth {s.depth}"
    )


def _members(root: Path, keys: set[str]) -> dict[str, list[tuple[int, str]]]:
    """Each ranged object's members by offset (to name what a ranged read was for)."""
    from memlake.search.index.ranges import RangedNpz

    out = {}
    for key in keys:
        npz = RangedNpz(LocalStore(root), key)
        out[key] = sorted((m.offset, m.name) for m in npz.members.values())
    return out


def _kind(key: str, req: Any = None, members: Any = None) -> str:
    if members and key in members and req.range_start is not None:
        names = [n for off, n in members[key] if off <= req.range_start]
        return names[-1] if names else "directory"
    parts = key.split("/")
    if "manifest" in parts:
        return "hint" if parts[-1].startswith("_") else "manifest"
    return parts[2] if len(parts) > 3 else parts[-1]


def parts(root: Path, n: int, model: LatencyModel, cache_bytes: int, sizes: list[int]) -> None:
    """Cold searches on the S3 model with ranged GETs split at each of `sizes` (KiB;
    ranges.PART_BYTES), the sizes alternating search by search in one process."""

    def split_at(kb: int) -> None:
        ranges.PART_BYTES = kb << 10

    _sizes_alternating(root, n, model, cache_bytes, sizes, split_at, "parts of")


def gaps(root: Path, n: int, model: LatencyModel, cache_bytes: int, sizes: list[int]) -> None:
    """Cold searches on the S3 model with the re-score rows' coalescing gap at each of `sizes`
    (KiB; shard_source.ROWS_GAP), alternating search by search in one process."""
    from memlake.search.index import shard_source

    def gap_of(kb: int) -> None:
        shard_source.ROWS_GAP = kb << 10

    _sizes_alternating(root, n, model, cache_bytes, sizes, gap_of, "rows gap")


def _sizes_alternating(
    root: Path,
    n: int,
    model: LatencyModel,
    cache_bytes: int,
    sizes: list[int],
    apply: Any,
    label: str,
) -> None:
    """n cold searches on the S3 model for each of `sizes` (KiB, set by `apply`), the sizes
    alternating search by search; prints each size's medians."""
    texts, qvecs, _ = _queries(root)
    got: dict[int, dict[str, list[float]]] = {k: defaultdict(list) for k in sizes}
    for i in range(n):
        for kb in sizes if i % 2 == 0 else sizes[::-1]:
            apply(kb)
            store = _store(root, True, model)
            searcher = Searcher(Settings(data_dir=root), cache_bytes=cache_bytes)
            t0 = time.perf_counter()
            _one_search(bare_lake(store), searcher, texts[i], qvecs[i])
            got[kb]["ms"].append((time.perf_counter() - t0) * 1000)
            s = store.reset()
            got[kb]["requests"].append(s.requests)
            got[kb]["MB"].append(s.bytes_read / 1e6)
            got[kb]["depth"].append(s.depth)
    for kb, row in got.items():
        med = {k: round(statistics.median(v), 1) for k, v in row.items()}
        print(f"{label} {kb} KiB: {json.dumps(med)}", flush=True)


def levers(root: Path, n: int, model: LatencyModel, cache_bytes: int, lever: str) -> None:
    """Cold searches with a lever off and on, alternating search by search in one process,
    each on local disk then on the S3 model: "ahead" (the re-score handed off and the hits
    read ahead: sides.HAND_OFF and HitsAhead.bm25) or "switch" (CPython's GIL switch interval
    of 5 ms against 1 ms: tried in stop 51, mixed, not kept; decision 4401) or "decode"
    (segments decoded with Arrow's threads, as shipped, against the calling thread alone:
    tried in stop 51, not kept) or "head" (the newest manifest's copy read beside the hint,
    memlake.lake.head_copy: stop 52; a tenant built before it gets its copy first)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from memlake.lake import head_copy, segments
    from memlake.search.query import hits_ahead, sides

    name_it, decode = hits_ahead.HitsAhead.bm25, segments.read_parquet
    read_copy = head_copy._read_copy
    if lever == "head":  # the copy a writer of today leaves (the hint names the same version)
        local = LocalStore(root)
        head_copy.publish(local, TENANT, bare_lake(local).snapshot(TENANT).manifest)

    def alone(data: bytes) -> Any:
        owned = pa.allocate_buffer(len(data))
        memoryview(owned).cast("B")[:] = data
        return pq.ParquetFile(pa.BufferReader(owned)).read(use_threads=False)

    def set_lever(on: bool) -> None:
        if lever == "ahead":
            sides.HAND_OFF = on
            hits_ahead.HitsAhead.bm25 = name_it if on else (lambda self, shards, tops: None)  # type: ignore[method-assign]
        elif lever == "decode":
            segments.read_parquet = decode if on else alone
        elif lever == "head":
            head_copy._read_copy = read_copy if on else (lambda store, tenant: (None, b""))
        else:
            sys.setswitchinterval(0.001 if on else 0.005)

    texts, qvecs, _ = _queries(root)
    got: dict[tuple[bool, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    try:
        for i in range(n):
            for on in (False, True) if i % 2 == 0 else (True, False):
                set_lever(on)
                for kind in ("local", "s3"):
                    store = _store(root, kind == "s3", model)
                    searcher = Searcher(Settings(data_dir=root), cache_bytes=cache_bytes)
                    t0 = time.perf_counter()
                    _one_search(bare_lake(store), searcher, texts[i], qvecs[i])
                    row = got[(on, kind)]
                    row["ms"].append((time.perf_counter() - t0) * 1000)
                    s = store.reset()
                    row["requests"].append(s.requests)
                    row["depth"].append(s.depth)
    finally:
        set_lever(lever != "switch")  # as shipped
    for (on, kind), row in sorted(got.items()):
        med = {k: round(statistics.median(v[1:]), 1) for k, v in row.items()}  # not the first
        print(f"{lever} {'on' if on else 'off'} {kind}: {json.dumps(med)}", flush=True)


def tenants(roots: list[Path], n: int, model: LatencyModel, cache_bytes: int) -> None:
    """Cold searches of the same queries on tenants built apart (a layout lever: the same
    corpus written by two versions of the writer), alternating search by search in one
    process, each on local disk then on the S3 model; then each tenant's vector-only
    recall@10 over the queries (the exact top 10 of truth.json)."""
    texts, qvecs, truth = _queries(roots[0])
    got: dict[tuple[int, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for i in range(n):
        for at in range(len(roots)) if i % 2 == 0 else reversed(range(len(roots))):
            for kind in ("local", "s3"):
                store = _store(roots[at], kind == "s3", model)
                searcher = Searcher(Settings(data_dir=roots[at]), cache_bytes=cache_bytes)
                t0 = time.perf_counter()
                _one_search(bare_lake(store), searcher, texts[i], qvecs[i])
                row = got[(at, kind)]
                row["ms"].append((time.perf_counter() - t0) * 1000)
                s = store.reset()
                row["requests"].append(s.requests)
                row["MB"].append(s.bytes_read / 1e6)
                row["depth"].append(s.depth)
    for (at, kind), row in sorted(got.items()):
        med = {k: round(statistics.median(v[1:]), 1) for k, v in row.items()}  # not the first
        print(f"{roots[at]} {kind}: {json.dumps(med)}", flush=True)
    for root in roots:  # each build names its episodes anew: its own truth.json
        truth = _queries(root)[2]
        lake, searcher = bare_lake(LocalStore(root)), Searcher(Settings(data_dir=root))
        hits = [
            _one_search(lake, searcher, texts[i], qvecs[i], VECTOR_ONLY)
            for i in range(min(len(truth), 100))
        ]
        found = [len(set(h) & set(truth[i][:10])) / 10 for i, h in enumerate(hits)]
        print(f"{root} vector-only recall@10: {statistics.mean(found):.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    modes = ["run", "trace", "parts", "gaps", "levers", "tenants", "adds"]
    parser.add_argument("mode", choices=modes)
    parser.add_argument("root", type=Path)
    parser.add_argument("--cold", type=int, default=7)
    parser.add_argument("--warm", type=int, default=60)
    parser.add_argument("--adds", type=int, default=15)
    parser.add_argument("--cache-mb", type=int, default=1024)
    parser.add_argument("--latency", default="25ms,90MB/s")
    parser.add_argument(
        "--client-cpu-ms", type=float, default=0.0, help="boto3's CPU a request (~1.8; 0: none)"
    )
    parser.add_argument("--part-kb", default="4096,2048,1024", help="parts: sizes to compare")
    parser.add_argument("--gap-kb", default="256,512,1024", help="gaps: re-score rows' gaps")
    parser.add_argument("--other", type=Path, action="append", help="tenants: more roots")
    parser.add_argument("--lever", choices=["ahead", "switch", "decode", "head"], default="ahead")
    args = parser.parse_args()
    model = replace(LatencyModel.parse(args.latency), client_cpu=args.client_cpu_ms / 1000)
    cache.PROMOTE, snapshot.INDEX_AFTER_LOOKUP = False, False  # nothing in the background
    cache_bytes = args.cache_mb << 20
    if args.mode == "trace":
        trace(args.root, model, cache_bytes)
        return
    if args.mode == "tenants":
        tenants([args.root, *(args.other or [])], args.cold, model, cache_bytes)
        return
    if args.mode == "levers":
        levers(args.root, args.cold, model, cache_bytes, args.lever)
        return
    if args.mode == "gaps":
        gaps(args.root, args.cold, model, cache_bytes, [int(k) for k in args.gap_kb.split(",")])
        return
    if args.mode == "adds":
        print("RESULT " + json.dumps(adds(args.root, args.adds, model)), flush=True)
        return
    if args.mode == "parts":
        sizes = [int(k) for k in args.part_kb.split(",")]
        parts(args.root, args.cold, model, cache_bytes, sizes)
        return
    out = {"latency": args.latency, "client_cpu_ms": args.client_cpu_ms, "cache_mb": args.cache_mb}
    out["cold"] = cold(args.root, args.cold, model, cache_bytes)
    print(json.dumps(out), flush=True)
    out["warm"] = warm(args.root, args.warm, model, cache_bytes)
    print(json.dumps(out["warm"]), flush=True)
    if args.adds:
        out["add_episode"] = adds(args.root, args.adds, model)
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
