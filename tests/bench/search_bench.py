"""Search latency at 1k / 10k / 100k episodes on the local lake, and LanceDB on the same data.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/bench/search_bench.py \
        [--sizes 1000 10000 100000] [--queries 200] [--chunks 1] [--vectors realistic|copies]

Corpus (synthetic, deterministic): each episode is ~90 words drawn from a Zipf-distributed
5,000-word vocabulary plus a unique tag word, stored through the lake's commit hooks in commits
of 64 episodes (the tail size), compacted as the server's maintenance would. Vectors are NOT
computed per episode (100k MiniLM embeddings would take hours); --chunks N gives every episode
N of them (real sessions have ~20 passages):
- realistic (default): tests/bench/vectors.py's mixes of real MiniLM passage vectors of the dev
  corpora, spread like real ones; query vectors are the dev corpora's real questions (then
  synthetic mixes of them past 409).
- copies: 400 distinct texts are embedded with MiniLM and each vector is one of them plus
  Gaussian noise (sigma 0.02 per dimension), re-normalised: near-duplicates, which cannot judge
  an approximate search. Query vectors embed the query texts.
Queries: 200 texts of 3-6 words from the same vocabulary (the BM25 side).

Per size it reports: warm search p50/p95 through search (query embedding included), the
same with the query vector given ("exact hybrid"), cold search (a fresh Lake and caches on the
same store, so manifest + shards are fetched) with its shard bytes and requests, add_episode
p50 with embedding (a 175-word synthetic episode, ~500 word pieces: 9 chunks of 64 tokens) and
the shard rebuild, and LanceDB 0.40's exact hybrid search (flat vector scan + its FTS index +
RRF) over the same rows, vectors and queries. With the query vector given it also runs a
vector-only search (weights bm25 0, vector 1) and reports its recall@10 against an exact numpy
scan over every episode's vectors ("vec_recall@10"; meaningful with realistic vectors), and
the process's peak resident memory.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.context import Principal  # noqa: E402
from memlake.embed.minilm import MiniLMEmbedder  # noqa: E402
from memlake.ids import new_id  # noqa: E402
from memlake.lake import Lake, Transaction  # noqa: E402
from memlake.lake.compaction import compact  # noqa: E402
from memlake.search import searcher  # noqa: E402
from memlake.search.hybrid import search  # noqa: E402
from memlake.search.index import shard_vectors  # noqa: E402
from memlake.search.indexing import Embedded  # noqa: E402
from memlake.search.query.params import SearchParams  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from memlake.tools import add_episode  # noqa: E402
from tests.bench import vectors  # noqa: E402
from tests.support.counting import CountingStore  # noqa: E402
from tests.wiring import bare_lake, indexed_context  # noqa: E402

TENANT = "bench"
rng = np.random.default_rng(11)
VOCAB = [f"w{i}" for i in range(5000)]
ZIPF = 1.0 / np.arange(1, len(VOCAB) + 1) ** 1.07
ZIPF /= ZIPF.sum()
_REAL = (
    "meeting budget travel dinner garden project deadline puppy doctor invoice train hotel"
    " recipe guitar laptop router marathon vendor rollout migration backup family weekend"
)
REAL_WORDS = _REAL.split()
WORDS = 90
RESCORES = [shard_vectors.RESCORE]


def words(n: int) -> str:
    picks = rng.choice(len(VOCAB), size=n, p=ZIPF)
    real = rng.choice(REAL_WORDS, size=n // 6)
    return " ".join([VOCAB[i] for i in picks] + list(real))


def episode_text(i: int) -> str:
    """Episode i's text: WORDS vocabulary words and its unique tag."""
    return f"{words(WORDS)} tag{i}"


def query_texts(n: int = 200) -> list[str]:
    """n query texts of 3-6 vocabulary words (the BM25 side)."""
    return [words(int(rng.integers(3, 7))) for _ in range(n)]


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


class Corpus:
    def __init__(self, n: int, chunks: int, embedder: MiniLMEmbedder, kind: str) -> None:
        self.texts = [episode_text(i) for i in range(n)]
        self.queries = query_texts()
        self.ids: list[str] = []  # filled by fill(), episode i's id
        if kind == "copies":
            base = embedder.embed([words(40) for _ in range(400)])
            picks = base[rng.integers(0, len(base), size=n * chunks)]
            flat = picks + rng.normal(0, 0.02, (n * chunks, 384))
            flat /= np.linalg.norm(flat, axis=1, keepdims=True)
            self.flat = flat.astype(np.float32)
            self.query_vectors = embedder.embed(self.queries)
        else:  # tests/bench/vectors.py: real MiniLM passage vectors mixed, real questions
            real = vectors.real()
            self.flat = vectors.passages(real, n, chunks)
            self.query_vectors = vectors.queries(real, 200)
        self.vectors = [self.flat[i * chunks : (i + 1) * chunks] for i in range(n)]  # views


def fill(lake: Lake, svc: Any, corpus: Corpus) -> None:
    t0 = time.perf_counter()
    for start in range(0, len(corpus.texts), 64):
        rows = []
        for i in range(start, min(start + 64, len(corpus.texts))):
            row = {"id": new_id(), "content": corpus.texts[i], "context": f"c{i % 4}"}
            row["created_at"] = row["started_at"] = time_of(i)
            vecs = corpus.vectors[i]
            starts, ends = windows(row["content"], len(vecs))
            svc.embedded.remember(Embedded(svc.content_hash(row), starts, ends, vecs))
            rows.append(row)
            corpus.ids.append(row["id"])

        def change(txn: Transaction, rows: list[dict[str, Any]] = rows) -> None:
            for r in rows:
                txn.put("episodes", r)

        lake.commit(TENANT, change)
        if (start // 64) % 64 == 63:
            compact(lake, TENANT, min_segments=16)
    compact(lake, TENANT, min_segments=2)
    took = time.perf_counter() - t0
    print(f"  filled {len(corpus.texts)} in {took:.0f} s, {rss_mb()} MB resident", flush=True)


def rss_mb() -> int:
    """This process's resident memory now, in MB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1_000_000


def windows(text: str, n: int) -> tuple[list[int], list[int]]:
    """n overlapping passages (a quarter of a window of overlap) covering `text`, as offsets."""
    step = max(1, len(text) // n)
    starts = [i * step for i in range(n)]
    ends = [min(len(text), s + step + step // 4) for s in starts]
    ends[-1] = len(text)
    return starts, ends


def time_of(i: int) -> Any:
    from datetime import UTC, datetime, timedelta

    return datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=7 * i)


def bench_size(
    n: int, chunks: int, queries: int, embedder: MiniLMEmbedder, kind: str
) -> dict[str, Any]:
    print(f"size {n}", flush=True)
    corpus = Corpus(n, chunks, embedder, kind)
    root = Path(tempfile.mkdtemp(prefix=f"memlake-search-{n}-"))
    settings = Settings(data_dir=root)
    store = CountingStore(LocalStore(root))
    lake = bare_lake(store)
    searcher.EMBED_CACHE = n + 1000
    searcher.EMBED_CACHE_VECTORS = (n + 1000) * chunks
    ctx = indexed_context(Principal(TENANT), lake, settings, embedder)
    svc = ctx.services.search
    fill(lake, svc, corpus)
    out: dict[str, Any] = {"episodes": n, "vectors/ep": chunks, "vectors": kind}
    shards = lake.snapshot(TENANT).extra["search"]["shards"]
    out["shards"] = len(shards)
    out["shard_B/ep"] = round(sum(s["bytes"] for s in shards) / n)

    qs = list(range(queries))
    for i in qs[:20]:  # warm the caches (shards, snapshot index, faiss)
        search(ctx.lake, ctx.services.search, TENANT, query=corpus.queries[i], limit=10)
    warm, exact = [], []
    for i in qs:
        t0 = time.perf_counter()
        search(ctx.lake, ctx.services.search, TENANT, query=corpus.queries[i % 200], limit=10)
        warm.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        search(
            lake,
            svc,
            TENANT,
            query=corpus.queries[i % 200],
            limit=10,
            recency=False,
            query_vector=corpus.query_vectors[i % 200],
            params=SearchParams(),
        )
        exact.append((time.perf_counter() - t0) * 1000)
    out["warm_p50_ms"] = round(statistics.median(warm), 1)
    out["warm_p95_ms"] = round(pct(warm, 95), 1)
    out["exact_qvec_p50_ms"] = round(statistics.median(exact), 2)
    out["warm_rss_MB"] = rss_mb()
    out.update(tool_modes(ctx, corpus, qs))
    for rescore in RESCORES:  # shard_vectors.RESCORE is read per search: no rebuild needed
        default, shard_vectors.RESCORE = shard_vectors.RESCORE, rescore
        got = vector_recall(lake, svc, corpus, qs)
        shard_vectors.RESCORE = default
        suffix = "" if rescore == default else f"_rescore{rescore}"
        out.update({k + suffix: v for k, v in got.items()})
    store.reset()
    search(ctx.lake, ctx.services.search, TENANT, query=corpus.queries[0], limit=10)
    out["warm_requests"] = sum(store.counts.values())

    cold, cold_bytes, cold_requests = [], [], []
    for i in range(5):
        cstore = CountingStore(LocalStore(root))
        clake = bare_lake(cstore)
        cctx = indexed_context(Principal(TENANT), clake, settings, embedder)
        csvc = cctx.services.search
        t0 = time.perf_counter()
        search(cctx.lake, cctx.services.search, TENANT, query=corpus.queries[i], limit=10)
        cold.append((time.perf_counter() - t0) * 1000)
        cold_bytes.append(csvc.shards.last.bytes)
        cold_requests.append(sum(cstore.counts.values()))
    out["cold_p50_ms"] = round(statistics.median(cold), 0)
    out["cold_max_ms"] = round(max(cold), 0)
    out["cold_shard_MB"] = round(statistics.median(cold_bytes) / 1e6, 1)
    out["cold_requests"] = statistics.median(cold_requests)

    adds, writes = [], []
    for _ in range(30):
        args = add_episode.AddEpisodeInput(content=words(150), context="c0")
        store.reset()
        t0 = time.perf_counter()
        add_episode.run(ctx, args)
        adds.append((time.perf_counter() - t0) * 1000)
        writes.append(store.writes)
    out["add_p50_ms"] = round(statistics.median(adds), 0)
    out["add_p95_ms"] = round(pct(adds, 95), 0)
    out["add_writes_p50"] = statistics.median(writes)
    out.update(lance(corpus, queries, out["exact_qvec_p50_ms"]))
    out["peak_rss_MB"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    shutil.rmtree(root, ignore_errors=True)
    return out


def tool_modes(ctx: Any, corpus: Corpus, qs: list[int]) -> dict[str, Any]:
    """search_episodes as an agent calls it, side by side per query: ten passages, and the
    evidence of the top 20 hits within 8,000 characters (issue 24)."""
    from memlake.tools.search_episodes import SearchEpisodesInput
    from memlake.tools.search_episodes import run as search_tool

    asks = {
        "tool_passage10": {"content": "passage", "limit": 10},
        "tool_evidence8k": {"content": "evidence", "budget": 8_000},
    }
    took: dict[str, list[float]] = {name: [] for name in asks}
    for i in qs:
        for name, ask in asks.items():
            args = SearchEpisodesInput(query=corpus.queries[i % 200], **ask)
            t0 = time.perf_counter()
            search_tool(ctx, args)
            took[name].append((time.perf_counter() - t0) * 1000)
    return {f"{name}_p50_ms": round(statistics.median(t), 1) for name, t in took.items()}


def vector_recall(lake: Lake, svc: Any, corpus: Corpus, qs: list[int]) -> dict[str, Any]:
    """Vector-only search (query vector given) against an exact numpy scan over every
    episode's vectors (an episode scores its best row): recall@10 and its p50."""
    only_vec = SearchParams(weights={"bm25": 0.0, "vector": 1.0})
    chunks = len(corpus.vectors[0])
    recalls, times = [], []
    for i in qs:
        q = np.asarray(corpus.query_vectors[i % 200], np.float32)
        t0 = time.perf_counter()
        hits = search(
            lake,
            svc,
            TENANT,
            query=corpus.queries[i % 200],
            limit=10,
            recency=False,
            query_vector=q,
            params=only_vec,
        )
        times.append((time.perf_counter() - t0) * 1000)
        best = (corpus.flat @ q).reshape(-1, chunks).max(axis=1)
        top = np.argpartition(-best, 10)[:10]
        truth = {corpus.ids[j] for j in top.tolist()}
        recalls.append(len(truth & {h.id for h in hits}) / 10)
    return {
        "vec_only_p50_ms": round(statistics.median(times), 2),
        "vec_recall@10": round(statistics.mean(recalls), 4),
        "vec_recall@10_min": min(recalls),
    }


def lance(corpus: Corpus, queries: int, ours_ms: float) -> dict[str, Any]:
    try:
        import lancedb
        import pyarrow as pa
    except ImportError:
        print("  lancedb is not installed: skipping the comparison (pip install lancedb)")
        return {}
    root = tempfile.mkdtemp(prefix="lance-")
    db = lancedb.connect(root)
    rows = [(t, v) for t, vs in zip(corpus.texts, corpus.vectors, strict=True) for v in vs]
    table = pa.table(
        {
            "id": pa.array([str(i) for i in range(len(rows))]),
            "text": pa.array([t for t, _ in rows]),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(np.concatenate([v for _, v in rows]).reshape(-1)), 384
            ),
        }
    )
    tbl = db.create_table("episodes", table)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_fts_index is deprecated in favour of FTS()
        tbl.create_fts_index("text")
    times = []
    for i in range(queries):
        q = tbl.search(query_type="hybrid").vector(corpus.query_vectors[i % 200])
        q = q.text(corpus.queries[i % 200]).limit(10)
        t0 = time.perf_counter()
        q.to_arrow()
        times.append((time.perf_counter() - t0) * 1000)
    shutil.rmtree(root, ignore_errors=True)
    p50 = statistics.median(times[5:])
    return {"lancedb_hybrid_p50_ms": round(p50, 1), "ratio_ours/lancedb": round(ours_ms / p50, 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=1)
    parser.add_argument("--words", type=int, default=90, help="words per episode")
    parser.add_argument("--no-lance", action="store_true")
    parser.add_argument(
        "--vectors",
        choices=["realistic", "copies"],
        default="realistic",
        help="realistic: tests/bench/vectors.py; copies: 400 embedded texts plus tiny noise",
    )
    parser.add_argument(
        "--rescore",
        type=int,
        nargs="+",
        default=[shard_vectors.RESCORE],
        help="measure vector recall@10 with each of these shard_vectors.RESCORE values",
    )
    args = parser.parse_args()
    global WORDS
    WORDS = args.words
    RESCORES[:] = args.rescore
    if args.no_lance:
        globals()["lance"] = lambda *a: {}
    random.seed(7)
    embedder = MiniLMEmbedder.shared()
    rows = [bench_size(n, args.chunks, args.queries, embedder, args.vectors) for n in args.sizes]
    cols = list(dict.fromkeys(c for r in rows for c in r))
    print(" | ".join(cols))
    for row in rows:
        print(" | ".join(str(row.get(c, "")) for c in cols))


if __name__ == "__main__":
    main()
