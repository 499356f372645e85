"""Search at scale (issue 13): 10k / 100k (/ 300k) episodes x 20 realistic vectors, built fast.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/scale_bench.py \
        [--sizes 10000 100000] [--queries 200] [--words 600] [--moto-max 10000] [--no-lance]

The tenant is built by tests/bench/scale_tenant.py with the library's own code (rows in one
commit per shard on a bare lake, shards written by Layout.seal / shard_build.build in the
layout the server reaches, the search state committed in the manifest) on a local lake, with
search_bench.py's corpus (WORDS Zipf words + a tag per episode, query texts of 3-6 words) and
tests/bench/vectors.py's realistic vectors (query vectors: the 200 first of vectors.queries,
i.e. the dev corpora's real questions; vector recall also for 200 of vectors.mixed_queries,
the calibrated mixes of them). Per size it reports:

- warm search p50/p95 (memlake.search.hybrid.search after 20 warm-up queries and the
  background promotion of the shards to whole ones that they start, as a server reaches; the
  wait is reported): with the query
  embedding (MiniLM), and hybrid with the query vector given (recency off, as search_bench);
  vector-only (weights bm25 0, vector 1) p50 and its recall@10 against the exact top-10
  (every row scanned in float32, an episode at its best row), for the real questions and
  for the mixed ones;
- cold search p50 (a new Lake, Searcher and caches on the same store, query embedding
  included) with the shard bytes fetched and the store requests, on the LocalStore and (up to
  --moto-max episodes: uploading GBs to moto is slow) on a moto S3 server subprocess;
- resident memory of the search state: a fresh subprocess loads the embedder, takes its RSS,
  opens the tenant and runs 40 searches, and reports the RSS growth (with the server's default
  shard cache, Settings.cache_bytes, and with --cache-bytes), and its warm p50 then;
- add_episode p50/p95 through memlake.tools.add_episode on the built tenant (commit hooks on,
  MiniLM embedding of a 150-word episode included; the first add is reported apart: it builds
  the episodes' id index);
- LanceDB 0.40 on the same passages and vectors (tests/bench/scale_lance.py): exact hybrid,
  IVF_HNSW_SQ-indexed hybrid, index build times, indexed vector recall@10; ratios ours/theirs
  with the query vector given.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.context import Principal  # noqa: E402
from memlake.embed.minilm import MiniLMEmbedder  # noqa: E402
from memlake.search.hybrid import search  # noqa: E402
from memlake.search.query.params import SearchParams  # noqa: E402
from memlake.search.searcher import Searcher  # noqa: E402
from memlake.store.base import ObjectStore  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from memlake.tools import add_episode  # noqa: E402
from tests.bench import scale_tenant, search_bench, vectors  # noqa: E402
from tests.bench.search_bench import pct, rss_mb  # noqa: E402
from tests.support.counting import CountingStore  # noqa: E402
from tests.wiring import bare_lake, indexed_context  # noqa: E402

TENANT = scale_tenant.TENANT
VEC_ONLY = SearchParams(weights={"bm25": 0.0, "vector": 1.0})
WARMUP = 20


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def warm(store: ObjectStore, embedder: Any, cache: int, tenant: Any, qs: Any) -> dict[str, Any]:
    texts, qvecs, mixed = qs
    lake = bare_lake(store)
    svc = Searcher(Settings(), embedder=embedder, cache_bytes=cache)
    for i in range(WARMUP):
        search(lake, svc, TENANT, query=texts[i], limit=10)
    # the steady state a server reaches: the shards that fit the cache fetched whole (and
    # their IVF lists held) in the background; before, the first pass over new queries ran on
    # ranged shards mid-promotion (the p95 of ~200 ms at 100k)
    t0 = time.perf_counter()
    svc.shards.wait_promotions()
    promoted_s = round(time.perf_counter() - t0, 1)
    with_embedding, hybrid, only, recalls = [], [], [], []
    for i in range(len(texts)):
        t0 = time.perf_counter()
        search(lake, svc, TENANT, query=texts[i], limit=10)
        with_embedding.append(_ms(t0))
        t0 = time.perf_counter()
        search(lake, svc, TENANT, query=texts[i], limit=10, recency=False, query_vector=qvecs[i])
        hybrid.append(_ms(t0))
        t0 = time.perf_counter()
        hits = search(
            lake, svc, TENANT, query=texts[i], limit=10, recency=False, query_vector=qvecs[i],
            params=VEC_ONLY,
        )  # fmt: skip
        only.append(_ms(t0))
        recalls.append(len(tenant.truth(i) & {h.id for h in hits}) / 10)
    mixed_recalls = []  # the synthetic mixes (tenant.truth numbers them after the real ones)
    for i in range(len(mixed)):
        hits = search(
            lake, svc, TENANT, query=texts[i], limit=10, recency=False, query_vector=mixed[i],
            params=VEC_ONLY,
        )  # fmt: skip
        mixed_recalls.append(len(tenant.truth(len(qvecs) + i) & {h.id for h in hits}) / 10)
    return {
        "promotion_wait_s": promoted_s,
        "warm_p50_ms": round(statistics.median(with_embedding), 1),
        "warm_p95_ms": round(pct(with_embedding, 95), 1),
        "qvec_hybrid_p50_ms": round(statistics.median(hybrid), 2),
        "qvec_hybrid_p95_ms": round(pct(hybrid, 95), 2),
        "vec_only_p50_ms": round(statistics.median(only), 2),
        "vec_recall@10": round(statistics.mean(recalls), 4),
        "vec_recall@10_min": min(recalls),
        "vec_recall@10_mixed": round(statistics.mean(mixed_recalls), 4),
        "vec_recall@10_mixed_min": min(mixed_recalls),
    }


def cold(make_store: Any, embedder: Any, texts: list[str], runs: int) -> dict[str, Any]:
    """A new Lake + Searcher (empty caches) on the same objects per run; embedding included.
    Promotion and the background id index are off: a tenant that fits the cache would fetch
    its shards whole, and the episodes table build its id index, in the background once the
    answer is ready; those bytes are not the cold search's, nor is their CPU the next one's."""
    from memlake.lake import snapshot
    from memlake.search.index import cache

    promote, cache.PROMOTE = cache.PROMOTE, False
    index, snapshot.INDEX_AFTER_LOOKUP = snapshot.INDEX_AFTER_LOOKUP, False
    try:
        return _cold(make_store, embedder, texts, runs)
    finally:
        cache.PROMOTE, snapshot.INDEX_AFTER_LOOKUP = promote, index


def _cold(make_store: Any, embedder: Any, texts: list[str], runs: int) -> dict[str, Any]:
    times, fetched, requests = [], [], []
    for i in range(runs):
        store = CountingStore(make_store())
        lake = bare_lake(store)
        svc = Searcher(Settings(), embedder=embedder)
        t0 = time.perf_counter()
        search(lake, svc, TENANT, query=texts[i], limit=10)
        times.append(_ms(t0))
        fetched.append(getattr(store, "bytes_read", svc.shards.last.bytes))
        requests.append(sum(store.counts.values()))
        del lake, svc
        gc.collect()
    return {
        "cold_p50_ms": round(statistics.median(times)),
        "cold_max_ms": round(max(times)),
        "cold_MB": round(statistics.median(fetched) / 1e6, 1),
        "cold_requests": statistics.median(requests),
    }


def probe(root: Path, cache: int, count: int) -> dict[str, Any]:
    """Run in a fresh subprocess: RSS growth of opening the tenant and searching."""
    texts = json.loads((root / "queries.json").read_text())
    qvecs = np.load(root / "queries.npy")
    embedder = MiniLMEmbedder.shared()
    embedder.embed(["warm the model up"])
    gc.collect()
    base = rss_mb()
    lake = bare_lake(LocalStore(root))
    svc = Searcher(Settings(), embedder=embedder, cache_bytes=cache)
    times = []
    for i in range(count):
        search(lake, svc, TENANT, query=texts[i], limit=10)
        t0 = time.perf_counter()
        search(lake, svc, TENANT, query=texts[i], limit=10, recency=False, query_vector=qvecs[i])
        times.append(_ms(t0))
    return {
        "rss_MB": rss_mb() - base,
        "qvec_p50_ms": round(statistics.median(times[count // 2 :]), 1),
    }


def run_probe(root: Path, cache: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--probe", str(root), "--cache-bytes", str(cache)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=os.environ)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def moto_cold(root: Path, embedder: Any, texts: list[str], runs: int) -> dict[str, Any]:
    """Copy the tenant's objects to a moto S3 server (a subprocess) and search cold there."""
    import boto3

    from memlake.store.s3 import S3Store

    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(k, "testing")  # moto's fake credentials
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).parent / "moto_server"
    server = subprocess.Popen(
        [str(exe), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        client = boto3.client("s3", region_name="us-east-1", endpoint_url=url)
        for _ in range(100):
            try:
                client.create_bucket(Bucket="scale")
                break
            except Exception:
                time.sleep(0.1)
        local = LocalStore(root)
        s3 = S3Store("scale", client=client)
        keys = [o.key for o in local.list(f"tenants/{TENANT}/")]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda k: s3.put(k, local.get(k)), keys))
        out: dict[str, Any] = {"moto_upload_s": round(time.perf_counter() - t0)}
        got = cold(lambda: S3Store("scale", client=client), embedder, texts, runs)
        out.update({"moto_" + k: v for k, v in got.items()})
        return out
    finally:
        server.terminate()
        server.wait(10)


def adds(root: Path, embedder: Any, count: int) -> dict[str, Any]:
    """add_episode p50 with its embedding timed apart (the embedding does not grow with the
    tenant; the commit, manifest and tail rebuild are what could)."""
    store = CountingStore(LocalStore(root))
    ctx = indexed_context(Principal(TENANT), bare_lake(store), Settings(), embedder)
    times, writes, embeds = [], [], []
    embed_ahead = add_episode.embed_ahead

    def timed(searcher: Any, row: Any) -> int:
        t0 = time.perf_counter()
        try:
            return embed_ahead(searcher, row)
        finally:
            embeds.append(_ms(t0))

    add_episode.embed_ahead = timed  # type: ignore[assignment]
    try:
        for _ in range(count + 1):
            args = add_episode.AddEpisodeInput(content=search_bench.words(150), context="c0")
            store.reset()
            t0 = time.perf_counter()
            add_episode.run(ctx, args)
            times.append(_ms(t0))
            writes.append(store.writes)
    finally:
        add_episode.embed_ahead = embed_ahead  # type: ignore[assignment]
    rest = [t - e for t, e in zip(times[1:], embeds[1:], strict=True)]
    return {
        "add_first_ms": round(times[0]),
        "add_p50_ms": round(statistics.median(times[1:])),
        "add_p95_ms": round(pct(times[1:], 95)),
        "add_embed_p50_ms": round(statistics.median(embeds[1:])),
        "add_without_embed_p50_ms": round(statistics.median(rest)),
        "add_writes_p50": statistics.median(writes[1:]),
    }


def bench_size(n: int, args: argparse.Namespace, embedder: Any, real: Any) -> dict[str, Any]:
    print(f"size {n}", flush=True)
    root = Path(tempfile.mkdtemp(prefix=f"memlake-scale-{n}-", dir=args.tmp))
    texts = search_bench.query_texts(args.queries)
    qvecs = vectors.queries(real, args.queries)
    mixed = vectors.mixed_queries(real, args.queries)
    (root / "queries.json").write_text(json.dumps(texts))
    np.save(root / "queries.npy", qvecs)
    lance = None
    if not args.no_lance:
        from tests.bench.scale_lance import Lance

        lance = Lance()
    t0 = time.perf_counter()
    tenant = scale_tenant.build(
        bare_lake(LocalStore(root)), root, n, embedder.name,
        lambda no, docs: vectors.passages(real, docs, scale_tenant.PER, seed=1000 + no),
        np.concatenate([qvecs, mixed]), sink=lance.add if lance is not None else None,
    )  # fmt: skip
    out: dict[str, Any] = {"episodes": n, "vectors": n * scale_tenant.PER}
    out["build_s"] = round(time.perf_counter() - t0)
    out.update({"build_" + k: v for k, v in tenant.took.items()})
    out["shards"] = len(tenant.infos)
    out["shard_MB"] = round(sum(s.bytes for s in tenant.infos) / 1e6)
    out["vector_MB"] = round(n * scale_tenant.PER * vectors.DIM * 4 / 1e6)
    print(f"  built: {out}", flush=True)
    out.update(warm(LocalStore(root), embedder, args.cache_bytes, tenant, (texts, qvecs, mixed)))
    gc.collect()
    print(f"  warm: {out}", flush=True)
    out.update(cold(lambda: LocalStore(root), embedder, texts, args.cold_runs))
    for label, cache in (
        ("default_cache", Settings().shard_cache_bytes),
        ("big_cache", args.cache_bytes),
    ):
        got = run_probe(root, cache)
        out.update({f"mem_{label}_{k}": v for k, v in got.items()})
    print(f"  cold + memory: {out}", flush=True)
    if n <= args.moto_max:
        out.update(moto_cold(root, embedder, texts, args.moto_runs))
    out.update(adds(root, embedder, args.adds))
    print(f"  moto + adds: {out}", flush=True)
    if lance is not None:
        truth = [set(tenant.exact.episodes[i].tolist()) for i in range(min(100, args.queries))]
        got = lance.measure(texts, qvecs, truth, args.lance_exact_queries, args.queries)
        lance.close()
        out.update(got)
        if "lance_exact_hybrid_p50_ms" in got:
            out["ratio_ours/lance_exact"] = round(
                out["qvec_hybrid_p50_ms"] / got["lance_exact_hybrid_p50_ms"], 3
            )
        out["ratio_ours/lance_indexed"] = round(
            out["qvec_hybrid_p50_ms"] / got["lance_indexed_hybrid_p50_ms"], 2
        )
    out["bench_peak_rss_MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    shutil.rmtree(root, ignore_errors=True)
    print("RESULT " + json.dumps(out), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--words", type=int, default=600, help="words per episode")
    parser.add_argument("--cold-runs", type=int, default=5)
    parser.add_argument("--moto-max", type=int, default=10000, help="largest size run on moto")
    parser.add_argument("--moto-runs", type=int, default=3)
    parser.add_argument("--adds", type=int, default=30)
    parser.add_argument("--no-lance", action="store_true")
    parser.add_argument("--lance-exact-queries", type=int, default=50)
    parser.add_argument(
        "--cache-bytes", type=int, default=16 << 30, help="shard cache of the warm searches"
    )
    parser.add_argument("--tmp", default=None, help="where the tenant's store goes")
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe is not None:
        print(json.dumps(probe(args.probe, args.cache_bytes, WARMUP)))
        return
    search_bench.WORDS = args.words
    embedder = MiniLMEmbedder.shared()
    real = vectors.real()
    rows = [bench_size(n, args, embedder, real) for n in args.sizes]
    cols = list(dict.fromkeys(c for r in rows for c in r))
    for c in cols:
        print(f"{c} | " + " | ".join(str(r.get(c, "")) for r in rows))


if __name__ == "__main__":
    main()
