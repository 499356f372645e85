"""Grids behind decisions 1315 and 1316, on a persistent scale tenant (scale_bench.py builds and
deletes its own; these reuse one):

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/scale_grid.py \
        build DIR --size 100000 [--codes pq4|sq8]
    ... scale_grid.py run DIR [--plans 40 56 72] [--one-thread]
    ... scale_grid.py shard DIR [--lists 40] [--k 240]
    ... scale_grid.py kernels
    ... scale_grid.py cold DIR [--runs 9]
    ... scale_grid.py adds DIR [--count 20] [--threads 1 2]
    ... scale_grid.py kernels-ab DIR [--rounds 3] [--one-thread]

- build: the tenant of scale_bench.py (scale_tenant.build, realistic vectors, the 200 query
  texts and vectors, the exact top-10 of each) written to DIR and kept;
- run: warm query.search p50 (16 GiB cache, 20 warm-up queries, the second of two passes over
  200 queries, query vector given) of the hybrid, vector-only (with recall@10 against exact) and
  BM25-only searches, per probe budget (ivf.PLAN_PER_SHARD) and rows re-scored across shards
  (sides.RESCORE_ACROSS, in one shard's depths), and of the hybrid with the query
  embedded (MiniLM); --one-thread keeps the search on its caller's thread (sides' pool never
  starts);
- shard: the biggest shard's vectors under each code (SQ8, SQ8 with one range, SQ6, SQ4 and PQ
  fast-scan 4-bit), its IVF lists probed for 100 real questions: search_preassigned time and
  how much of the exact top 30 of the probed lists the re-scored top 30 keeps;
- kernels: BM25's posting accumulate (ufunc.at, fancy indexing, bincount, scipy's
  csc_matvec) on one and two threads;
- cold: --runs cold hybrid searches (query embedded), each in a new Lake and Searcher (default
  1 GiB shard cache) on DIR, promotion and the background id index off: p50 and min;
- kernels-ab: the search's per-shard kernels side by side in one process (decision 2502):
  rounds of numpy's then numba's (MEMLAKE_KERNELS), each the warm p50 of hybrid, vector-only
  and BM25-only over the 200 queries (query vector given, as `run`), then the median of the
  rounds' p50s and numba / numpy; every query's hits (ids, scores, passages) compared across
  the two;
- adds: scale_bench's add_episode measurement on DIR (it adds --count episodes a round), its
  MiniLM embedding on each --threads count in turn, 3 rounds (decision 1319).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.embed.minilm import MiniLMEmbedder  # noqa: E402
from memlake.pools import Job  # noqa: E402
from memlake.search.hybrid import search  # noqa: E402
from memlake.search.index import ivf  # noqa: E402
from memlake.search.index.shard import Shard  # noqa: E402
from memlake.search.query import sides  # noqa: E402
from memlake.search.query.params import SearchParams  # noqa: E402
from memlake.search.searcher import Searcher  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from tests.bench import scale_tenant, search_bench, vectors  # noqa: E402
from tests.wiring import bare_lake  # noqa: E402

VEC = SearchParams(weights={"bm25": 0.0, "vector": 1.0})
BM25 = SearchParams(weights={"bm25": 1.0, "vector": 0.0})


def build(root: Path, size: int, codes: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    ivf.CODES = codes
    search_bench.WORDS = 600
    real = vectors.real()
    texts, qvecs = search_bench.query_texts(200), vectors.queries(real, 200)
    (root / "queries.json").write_text(json.dumps(texts))
    np.save(root / "queries.npy", qvecs)
    tenant = scale_tenant.build(
        bare_lake(LocalStore(root)), root, size, MiniLMEmbedder.shared().name,
        lambda no, docs: vectors.passages(real, docs, scale_tenant.PER, seed=1000 + no), qvecs,
    )  # fmt: skip
    np.save(root / "exact_episodes.npy", tenant.exact.episodes)
    (root / "ids.json").write_text(json.dumps(tenant.ids))


class _NeverStarted:
    """Search helpers whose calls never start: the caller runs every task (one thread)."""

    def start(self, fn: Any) -> Job:
        return Job(fn)


def run(root: Path, plans: list[int], one_thread: bool, across: list[int]) -> None:
    if one_thread:
        sides._HELPERS = _NeverStarted()  # type: ignore[assignment]
    texts = json.loads((root / "queries.json").read_text())
    qvecs = np.load(root / "queries.npy")
    ids = json.loads((root / "ids.json").read_text())
    exact = np.load(root / "exact_episodes.npy")
    lake = bare_lake(LocalStore(root))
    svc = Searcher(Settings(), embedder=MiniLMEmbedder.shared(), cache_bytes=16 << 30)

    def p50(
        params: SearchParams | None, recall: bool = False, embed: bool = False
    ) -> tuple[float, float | None]:
        times, got = [], []
        for i in range(len(texts)):
            kw: dict[str, Any] = {"params": params} if params is not None else {}
            if not embed:
                kw["query_vector"] = qvecs[i]
            t0 = time.perf_counter()
            hits = search(
                lake, svc, scale_tenant.TENANT, query=texts[i], limit=10, recency=False, **kw
            )
            times.append((time.perf_counter() - t0) * 1000)
            if recall:
                got.append(len({ids[e] for e in exact[i].tolist()} & {h.id for h in hits}) / 10)
        return round(statistics.median(times), 2), (round(statistics.mean(got), 3) if got else None)

    for i in range(20):
        search(lake, svc, scale_tenant.TENANT, query=texts[i], limit=10, query_vector=qvecs[i])
    svc.shards.wait_promotions()
    for plan, rescore in [(p, a) for p in plans for a in across]:
        ivf.PLAN_PER_SHARD, sides.RESCORE_ACROSS = plan, rescore
        for _ in range(2):  # the first pass adds the lists it probes to FAISS
            hybrid, (vec, recall), bm25 = p50(None), p50(VEC, True), p50(BM25)
            embedded = p50(None, embed=True)
        print(f"plan {plan}, re-score across {rescore}: hybrid {hybrid[0]} ms, vector-only {vec}"
              f" ms (recall@10 {recall}), BM25-only {bm25[0]} ms, hybrid with the embedding"
              f" {embedded[0]} ms", flush=True)  # fmt: skip


def shard_codes(root: Path, lists: int, k: int) -> None:
    import faiss

    paths = sorted(root.glob("tenants/*/search/*.npz"), key=lambda p: -p.stat().st_size)
    shard = Shard.from_bytes(paths[0].read_bytes())
    x = np.ascontiguousarray(shard.vectors, np.float32)
    dim, held = x.shape[1], shard.ivf_index()
    assert held is not None, "the biggest shard has no IVF index"
    queries = np.load(root / "queries.npy").astype(np.float32)[:100]
    flat = faiss.IndexFlatIP(dim)
    flat.add(held.centroids)
    assign = flat.search(x, 1)[1][:, 0]  # each row's list, as the indexes below assign it
    members = [np.flatnonzero(assign == no) for no in range(held.nlist)]
    sq = faiss.ScalarQuantizer
    kinds: dict[str, Any] = {
        "SQ8": sq.QT_8bit, "SQ8, one range": sq.QT_8bit_uniform, "SQ6": sq.QT_6bit,
        "SQ4": sq.QT_4bit, "PQ fast-scan 4-bit": "pq",
    }  # fmt: skip
    for name, qt in kinds.items():
        coarse = faiss.IndexFlatIP(dim)
        coarse.add(held.centroids)
        ip = faiss.METRIC_INNER_PRODUCT
        if qt == "pq":
            index: Any = faiss.IndexIVFPQFastScan(coarse, dim, held.nlist, dim // 4, 4, ip)
            index.by_residual = False
        else:
            index = faiss.IndexIVFScalarQuantizer(coarse, dim, held.nlist, qt, ip, False)
        index.train(x[:: max(1, len(x) // 16384)])
        index.add_with_ids(x, np.arange(len(x), dtype=np.int64))
        spent, kept = 0.0, []
        for q in queries:
            q1 = q[None]
            dq, iq = coarse.search(q1, lists)
            params = faiss.SearchParametersIVF()
            params.nprobe = lists
            dist, idx = np.empty((1, k), np.float32), np.empty((1, k), np.int64)
            sp = faiss.swig_ptr
            t0 = time.perf_counter()
            index.search_preassigned_c(
                1, sp(q1), k, sp(iq), sp(dq), sp(dist), sp(idx), False, params
            )
            spent += time.perf_counter() - t0
            cand = idx[0][idx[0] >= 0]
            inlists = np.concatenate([members[no] for no in iq[0]])
            best = set(inlists[np.argsort(-(x[inlists] @ q))[:30]].tolist())
            got = set(cand[np.argsort(-(x[cand] @ q))[:30]].tolist())
            kept.append(len(best & got) / 30)
        us = spent / len(queries) * 1e6
        print(f"{name}: {us:.0f} us a search, exact top 30 kept {np.mean(kept):.3f}", flush=True)


def kernels() -> None:
    rng = np.random.default_rng(0)
    n = 81920
    # int32, as a shard stores its postings (numpy converts them for every fancy index)
    docs = np.sort(rng.choice(n, 60000, replace=False)).astype(np.int32)
    sat = rng.random(60000).astype(np.float32)

    def one(how: str, reps: int) -> None:
        s = np.zeros(n, np.float64 if how == "bincount" else np.float32)
        for _ in range(reps):
            if how == "ufunc.at":
                np.add.at(s, docs, sat)
            elif how == "fancy":
                s[docs] += sat
            elif how == "bincount":
                s += np.bincount(docs, sat, minlength=n)
            else:
                csc_matvec(n, 1, column, docs, sat, weight, s)

    from scipy.sparse._sparsetools import csc_matvec

    column, weight = np.array([0, len(docs)], np.int32), np.ones(1, np.float32)
    for how in ("ufunc.at", "fancy", "bincount", "csc_matvec"):
        one(how, 50)
        t0 = time.perf_counter()
        one(how, 400)
        alone = (time.perf_counter() - t0) / 400 * 1e6
        pair = [threading.Thread(target=one, args=(how, 200)) for _ in range(2)]
        t0 = time.perf_counter()
        for t in pair:
            t.start()
        for t in pair:
            t.join()
        both = (time.perf_counter() - t0) / 400 * 1e6
        print(f"{how}: {alone:.0f} us a 60k-entry posting on one thread, {both:.0f} on two")


def cold(root: Path, runs: int) -> None:
    from memlake.lake import snapshot
    from memlake.search.index import cache

    cache.PROMOTE, snapshot.INDEX_AFTER_LOOKUP = False, False  # nothing in the background
    texts = json.loads((root / "queries.json").read_text())
    embedder = MiniLMEmbedder.shared()
    import faiss  # noqa: F401  (imported once per process: not a cold search's cost)

    times = []
    for i in range(runs):
        lake = bare_lake(LocalStore(root))
        svc = Searcher(Settings(), embedder=embedder, cache_bytes=1 << 30)
        t0 = time.perf_counter()
        search(lake, svc, scale_tenant.TENANT, query=texts[i], limit=10, recency=False)
        times.append(round((time.perf_counter() - t0) * 1000))
    print(f"cold p50 {statistics.median(times)} ms, min {min(times)} ms: {times}", flush=True)


def adds(root: Path, count: int, threads: list[int]) -> None:
    from tests.bench import scale_bench

    rows: dict[int, list[dict[str, Any]]] = {n: [] for n in threads}
    for _ in range(3):
        for n in threads:
            rows[n].append(scale_bench.adds(root, MiniLMEmbedder(threads=n), count))
    for n, got in rows.items():
        keys = ("add_p50_ms", "add_embed_p50_ms", "add_without_embed_p50_ms")
        medians = {k: statistics.median(r[k] for r in got) for k in keys}
        print(f"embedding on {n} thread(s), median of 3 rounds: {medians}", flush=True)


def kernels_ab(root: Path, rounds: int, one_thread: bool) -> None:
    import os

    from memlake.search.index import kernels

    if one_thread:
        sides._HELPERS = _NeverStarted()  # type: ignore[assignment]
    texts = json.loads((root / "queries.json").read_text())
    qvecs = np.load(root / "queries.npy")
    lake = bare_lake(LocalStore(root))
    svc = Searcher(Settings(), embedder=MiniLMEmbedder.shared(), cache_bytes=16 << 30)
    kinds = {"hybrid": None, "vector-only": VEC, "BM25-only": BM25}

    def one_pass(params: SearchParams | None) -> tuple[float, list[Any]]:
        times, hits = [], []
        for i in range(len(texts)):
            kw: dict[str, Any] = {"params": params} if params is not None else {}
            t0 = time.perf_counter()
            got = search(lake, svc, scale_tenant.TENANT, query=texts[i], limit=10,
                         recency=False, query_vector=qvecs[i], **kw)  # fmt: skip
            times.append((time.perf_counter() - t0) * 1000)
            hits.append([(h.id, h.score, h.passage) for h in got])
        return statistics.median(times), hits

    def use(mode: str) -> None:
        os.environ["MEMLAKE_KERNELS"] = mode
        kernels.reset()
        assert kernels.which() == mode, kernels.report()

    for mode in ("numpy", "numba"):  # warm-up: shards, IVF lists, both kernels loaded
        use(mode)
        for i in range(20):
            search(lake, svc, scale_tenant.TENANT, query=texts[i], limit=10, query_vector=qvecs[i])
    svc.shards.wait_promotions()
    p50: dict[tuple[str, str], list[float]] = {}
    results: dict[tuple[str, str], list[Any]] = {}
    for _ in range(rounds):
        for mode in ("numpy", "numba"):
            use(mode)
            for kind, params in kinds.items():
                took, hits = one_pass(params)
                p50.setdefault((mode, kind), []).append(took)
                results[(mode, kind)] = hits
    print(f"kernels side by side, {rounds} rounds of {len(texts)} queries"
          f"{' on one thread' if one_thread else ''}: {kernels.report()}")  # fmt: skip
    for kind in kinds:
        a, b = (statistics.median(p50[(m, kind)]) for m in ("numpy", "numba"))
        differ = sum(
            x != y for x, y in zip(results[("numpy", kind)], results[("numba", kind)], strict=True)
        )
        print(f"{kind}: numpy {a:.2f} ms, numba {b:.2f} ms, numba / numpy {b / a:.3f}"
              f" (rounds' p50s {[round(x, 2) for x in p50[('numpy', kind)]]} /"
              f" {[round(x, 2) for x in p50[('numba', kind)]]}); queries whose hits differ:"
              f" {differ}", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("root", type=Path)
    b.add_argument("--size", type=int, default=100000)
    b.add_argument("--codes", choices=["pq4", "sq8"], default="pq4")
    r = sub.add_parser("run")
    r.add_argument("root", type=Path)
    r.add_argument("--plans", type=int, nargs="+", default=[ivf.PLAN_PER_SHARD])
    r.add_argument("--one-thread", action="store_true")
    r.add_argument("--across", type=int, nargs="+", default=[sides.RESCORE_ACROSS])
    s = sub.add_parser("shard")
    s.add_argument("root", type=Path)
    s.add_argument("--lists", type=int, default=40)
    s.add_argument("--k", type=int, default=240)
    sub.add_parser("kernels")
    c = sub.add_parser("cold")
    c.add_argument("root", type=Path)
    c.add_argument("--runs", type=int, default=9)
    a = sub.add_parser("adds")
    a.add_argument("root", type=Path)
    a.add_argument("--count", type=int, default=20)
    a.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ab = sub.add_parser("kernels-ab")
    ab.add_argument("root", type=Path)
    ab.add_argument("--rounds", type=int, default=3)
    ab.add_argument("--one-thread", action="store_true")
    args = parser.parse_args()
    if args.cmd == "kernels-ab":
        kernels_ab(args.root, args.rounds, args.one_thread)
    elif args.cmd == "build":
        build(args.root, args.size, args.codes)
    elif args.cmd == "run":
        run(args.root, args.plans, args.one_thread, args.across)
    elif args.cmd == "shard":
        shard_codes(args.root, args.lists, args.k)
    elif args.cmd == "cold":
        cold(args.root, args.runs)
    elif args.cmd == "adds":
        adds(args.root, args.count, args.threads)
    else:
        kernels()


if __name__ == "__main__":
    main()
