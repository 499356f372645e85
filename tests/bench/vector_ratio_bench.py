"""Vector-only search against one brute-force pass over the same vectors (issue 25's target:
<= 0.1x at 20k x 20 and above), with mixed and with real question vectors.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared .venv/bin/python \\
        tests/bench/vector_ratio_bench.py build DIR [--size 20000]
    ... vector_ratio_bench.py run DIR [--queries 200] [--maintain]

- build: scale_tenant.build's tenant (realistic passage vectors, vectors.py: each mixes a real
  MiniLM chat passage of the episode's home session with 1-2 others plus noise) in the layout
  the write path reaches, kept in DIR with every vector (vectors.npy, for the numpy pass and the
  exact top-10).
- A first_share_bench tenant (it keeps truth.json, not vectors.npy) works too: its exact
  top-10s come from truth.json, and the numpy pass runs over random rows of its vectors'
  shape (the same bytes and operations; the pass's time does not depend on the values).
- run: for two query kinds, `mixed` (vectors.mixed_queries: real questions mixed like the passages,
  calibrated) and `real` (the dev corpora's real question vectors as MiniLM embeds them, not
  mixed), vector-only search (weights bm25 0, vector 1, query vector given) through
  memlake.search.hybrid.search on a warm Searcher with the server's shard cache
  (Settings.shard_cache_bytes, or --cache-bytes):
  - `quiet`: p50 over the queries, one after the other;
  - `alternating`: each search follows one numpy pass over all vectors (q @ V.T and its top
    10), as a check that keeps the CPU caches cold would run it; the pass's own p50 too;
  - the ratios search / numpy pass, and recall@10 against the exact top-10 (an episode at its
    best vector).
  --maintain first runs the scheduled maintenance pass on the tenant (shard merges, when the
  policy has them), so the layout maintenance leaves is what is measured.
- versus DIR --a TREE --b TREE: two checkouts paired (say a git worktree of main and a copy of
  a change), a worker process each (`serve`) loading the tenant with that tree's memlake, each
  question asked of both in alternating order, each right after the worker's numpy pass,
  one worker idle while the other runs: the numbers `pair` gives, across versions of the code.
- pair DIR --b MODULE.NAME=VALUE ...: a paired A/B of search settings, each question both ways
  back to back in alternating order, each right after a numpy pass: A the defaults, B with
  the settings given (MODULE one of SETTING_MODULES, say `sides.KEEP_SHARE=1e9`). It prints
  both alternating p50s, the median paired difference, the share of questions with the same
  top 10 and each side's recall@10.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.embed.minilm import MiniLMEmbedder  # noqa: E402
from memlake.search.hybrid import search  # noqa: E402
from memlake.search.index.state import SearchState  # noqa: E402
from memlake.search.query.params import SearchParams  # noqa: E402
from memlake.search.searcher import Searcher  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from tests.bench import scale_tenant, search_bench, vectors  # noqa: E402
from tests.wiring import bare_lake  # noqa: E402

VEC = SearchParams(weights={"bm25": 0.0, "vector": 1.0})
PER = scale_tenant.PER


def build(root: Path, size: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    search_bench.WORDS = 600
    real = vectors.real()
    kinds = {"mixed": vectors.mixed_queries(real, 200), "real": real.queries[:200]}
    for kind, q in kinds.items():
        np.save(root / f"queries-{kind}.npy", np.asarray(q, np.float32))
    (root / "texts.json").write_text(json.dumps(search_bench.query_texts(200)))
    parts: list[np.ndarray] = []

    def vectors_of(no: int, docs: int) -> np.ndarray:
        flat = vectors.passages(real, docs, PER, seed=1000 + no)
        parts.append(np.asarray(flat, np.float32))
        return flat

    tenant = scale_tenant.build(
        bare_lake(LocalStore(root)), root, size, MiniLMEmbedder.shared().name, vectors_of,
        kinds["mixed"],
    )  # fmt: skip
    np.save(root / "vectors.npy", np.concatenate(parts))
    (root / "ids.json").write_text(json.dumps(tenant.ids))


def exact_top(q: np.ndarray, flat: np.ndarray, k: int = 10) -> np.ndarray:
    """Episode numbers of the exact top-k of each query (an episode at its best vector)."""
    out = []
    for row in q:
        best = (flat @ row).reshape(-1, PER).max(axis=1)
        out.append(np.argpartition(-best, k - 1)[:k])
    return np.asarray(out)


def _vectors(root: Path, episodes: int) -> np.ndarray:
    """The tenant's vectors for the numpy pass: vectors.npy, or for a first_share_bench
    tenant (which keeps truth.json instead) random unit-free rows of the same shape, so the
    pass reads and multiplies as many bytes (its time does not depend on their values)."""
    if (root / "vectors.npy").exists():
        return np.load(root / "vectors.npy")
    dim = np.load(root / "queries-real.npy").shape[1]
    return np.random.default_rng(0).standard_normal((episodes * PER, dim), dtype=np.float32)


def _wanted(root: Path, kind: str, q: np.ndarray, flat: np.ndarray, ids: list[str]) -> list[set]:
    """Each query's exact top-10 episode ids: from the vectors, or first_share_bench's
    truth.json (the real questions' then the mixed ones', 200 each)."""
    if (root / "vectors.npy").exists():
        return [{ids[e] for e in top.tolist()} for top in exact_top(q, flat)]
    truth = json.loads((root / "truth.json").read_text())
    first = 0 if kind == "real" else len(np.load(root / "queries-real.npy"))
    return [set(t) for t in truth[first : first + len(q)]]


def _opened(root: Path, cache_bytes: int | None) -> tuple[Any, ...]:
    """A kept tenant's vectors (`_vectors`), episode ids, lake, settings, warm-able Searcher
    (with the server's shard cache, or `cache_bytes`) and that cache's bytes."""
    ids = json.loads((root / "ids.json").read_text())
    flat = _vectors(root, len(ids))
    lake = bare_lake(LocalStore(root))
    settings = Settings(data_dir=root)
    cache = settings.shard_cache_bytes if cache_bytes is None else cache_bytes
    svc = Searcher(settings, embedder=MiniLMEmbedder.shared(), cache_bytes=cache)
    return flat, ids, lake, settings, svc, cache


def run(root: Path, queries: int, maintain: bool, cache_bytes: int | None) -> None:
    flat, ids, lake, settings, svc, cache = _opened(root, cache_bytes)
    texts = json.loads((root / "texts.json").read_text())
    if maintain:
        _maintain(lake, svc, settings)
    state = SearchState.from_extra(lake.snapshot(scale_tenant.TENANT).extra)
    assert state is not None
    out: dict[str, Any] = {
        "episodes": len(ids),
        "vectors": len(flat),
        "shards": len(state.shards),
        "shard_docs": [s.docs for s in state.shards],
        "shard_MB": round(sum(s.bytes for s in state.shards) / 1e6),
        "cache_MB": round(cache / 1e6),
    }
    for kind in ("mixed", "real"):
        q = np.load(root / f"queries-{kind}.npy")[:queries]
        truth = _wanted(root, kind, q, flat, ids)

        def one(i: int, q: np.ndarray = q, truth: list[set] = truth) -> tuple[float, float]:
            t0 = time.perf_counter()
            hits = search(
                lake, svc, scale_tenant.TENANT, query=texts[i % len(texts)], limit=10,
                recency=False, query_vector=q[i], params=VEC,
            )  # fmt: skip
            took = (time.perf_counter() - t0) * 1000
            return took, len(truth[i] & {h.id for h in hits}) / 10

        for i in range(min(20, len(q))):
            one(i)
        svc.shards.wait_promotions()
        for i in range(len(q)):  # the first pass adds the lists it probes to FAISS
            one(i)
        quiet = [one(i) for i in range(len(q))]
        alternating, passes = [], []
        for i in range(len(q)):
            t0 = time.perf_counter()
            best = (flat @ q[i]).reshape(-1, PER).max(axis=1)
            np.argpartition(-best, 9)[:10]
            passes.append((time.perf_counter() - t0) * 1000)
            alternating.append(one(i)[0])
        numpy_p50 = statistics.median(passes)
        quiet_p50 = statistics.median(t for t, _ in quiet)
        alt_p50 = statistics.median(alternating)
        out[kind] = {
            "recall@10": round(statistics.mean(r for _, r in quiet), 3),
            "worst_recall": min(r for _, r in quiet),
            "quiet_p50_ms": round(quiet_p50, 2),
            "alternating_p50_ms": round(alt_p50, 2),
            "numpy_pass_p50_ms": round(numpy_p50, 2),
            "ratio_quiet": round(quiet_p50 / numpy_p50, 3),
            "ratio_alternating": round(alt_p50 / numpy_p50, 3),
        }
        print(kind, json.dumps(out[kind]), flush=True)
    print("RESULT " + json.dumps(out), flush=True)


def _timed(lake: Any, svc: Searcher, q: np.ndarray) -> tuple[float, list[str]]:
    """One vector-only search of `q` (`pair`'s and `serve`'s): its ms and its hits' ids."""
    t0 = time.perf_counter()
    hits = search(
        lake, svc, scale_tenant.TENANT, query="", limit=10, recency=False,
        query_vector=q, params=VEC,
    )  # fmt: skip
    return (time.perf_counter() - t0) * 1000, [h.id for h in hits]


def _paired(
    a: list[float], b: list[float], same: int, recall_a: float, recall_b: float, n: int
) -> dict[str, Any]:
    """`pair`'s and `versus`'s summary of one query kind: both p50s, the median paired
    difference (b - a), the share of equal top 10s and each side's recall@10."""
    a_ms, b_ms = np.asarray(a), np.asarray(b)
    return {
        "alternating_p50_ms": [round(float(np.median(a_ms)), 3), round(float(np.median(b_ms)), 3)],
        "paired_diff_ms": round(float(np.median(b_ms - a_ms)), 3),
        "same_top10": f"{same}/{n}",
        "recall@10": [round(recall_a / n, 4), round(recall_b / n, 4)],
    }


#: the modules whose settings `pair` may set
SETTING_MODULES = {
    "sides": "memlake.search.query.sides",
    "ivf": "memlake.search.index.ivf",
    "shard_vectors": "memlake.search.index.shard_vectors",
}


def pair(root: Path, queries: int, settings_b: list[str]) -> None:
    import importlib

    flat, ids, lake, _, svc, _ = _opened(root, None)
    changes = []
    for item in settings_b:
        name, value = item.split("=", 1)
        module, attr = name.split(".", 1)
        target = importlib.import_module(SETTING_MODULES[module])
        changes.append(
            (target, attr, getattr(target, attr), type(getattr(target, attr))(float(value)))
        )

    def side(b: bool) -> None:
        for target, attr, default, changed in changes:
            setattr(target, attr, changed if b else default)

    def one(q: np.ndarray) -> tuple[float, list[str]]:
        return _timed(lake, svc, q)

    out: dict[str, Any] = {"b": settings_b}
    for kind in ("real", "mixed"):
        q = np.load(root / f"queries-{kind}.npy")[:queries]
        truth = _wanted(root, kind, q, flat, ids)
        for b in (False, True, False):  # warm both ways (the first pass adds lists to FAISS)
            side(b)
            for row in q:
                one(row)
        svc.shards.wait_promotions()
        took: dict[bool, list[float]] = {False: [], True: []}
        same, recall = 0, {False: 0.0, True: 0.0}
        for i, row in enumerate(q):
            got = {}
            for b in (False, True) if i % 2 == 0 else (True, False):
                side(b)
                (flat @ row).reshape(-1, PER).max(axis=1)  # the numpy pass: caches cold
                ms, got[b] = one(row)
                took[b].append(ms)
                recall[b] += len(truth[i] & set(got[b])) / 10
            same += got[False] == got[True]
        side(False)
        out[kind] = _paired(took[False], took[True], same, recall[False], recall[True], len(q))
        print(kind, json.dumps(out[kind]), flush=True)
    print("RESULT " + json.dumps(out), flush=True)


def serve(root: Path, queries: int) -> None:
    """`versus`'s worker: warm, then one search after a numpy pass per line of stdin."""
    from memlake.search.index import kernels

    flat, ids, lake, _, svc, _ = _opened(root, None)
    kernels.wait()
    asked = {kind: np.load(root / f"queries-{kind}.npy")[:queries] for kind in ("real", "mixed")}

    def one(q: np.ndarray) -> tuple[float, list[str]]:
        return _timed(lake, svc, q)

    for q in asked.values():
        for _ in range(3):  # the first pass adds the lists it probes to FAISS
            for row in q:
                one(row)
    svc.shards.wait_promotions()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        ask = json.loads(line)
        q = asked[ask["kind"]][ask["i"]]
        (flat @ q).reshape(-1, PER).max(axis=1)  # the numpy pass: caches cold
        ms, got = one(q)
        print(json.dumps({"ms": ms, "ids": got}), flush=True)


def versus(root: Path, queries: int, trees: dict[str, Path]) -> None:
    """Two checkouts' searches paired: a worker process each (`serve`, PYTHONPATH at the
    tree's shared/), each question to both in alternating order, one waiting while the
    other runs; p50s, the median paired difference (b - a), same top 10s, recall."""
    import os
    import subprocess

    ids = json.loads((root / "ids.json").read_text())
    flat = _vectors(root, len(ids))
    workers = {}
    try:
        for name, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": str(tree.resolve() / "shared")}
            cmd = [sys.executable, __file__, "serve", str(root), "--queries", str(queries)]
            workers[name] = subprocess.Popen(
                cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
        for worker in workers.values():
            assert worker.stdout is not None
            json.loads(worker.stdout.readline())  # ready

        def ask(name: str, kind: str, i: int) -> dict[str, Any]:
            worker = workers[name]
            assert worker.stdin is not None and worker.stdout is not None
            worker.stdin.write(json.dumps({"kind": kind, "i": i}) + "\n")
            worker.stdin.flush()
            got: dict[str, Any] = json.loads(worker.stdout.readline())
            return got

        out: dict[str, Any] = {"trees": {n: str(t) for n, t in trees.items()}}
        for kind in ("real", "mixed"):
            q = np.load(root / f"queries-{kind}.npy")[:queries]
            truth = _wanted(root, kind, q, flat, ids)
            took: dict[str, list[float]] = {"a": [], "b": []}
            same, recall = 0, {"a": 0.0, "b": 0.0}
            for i in range(len(q)):
                got = {n: ask(n, kind, i) for n in (("a", "b") if i % 2 == 0 else ("b", "a"))}
                for n, g in got.items():
                    took[n].append(g["ms"])
                    recall[n] += len(truth[i] & set(g["ids"])) / 10
                same += got["a"]["ids"] == got["b"]["ids"]
            out[kind] = _paired(took["a"], took["b"], same, recall["a"], recall["b"], len(q))
            print(kind, json.dumps(out[kind]), flush=True)
        print("RESULT " + json.dumps(out), flush=True)
    finally:
        for worker in workers.values():
            if worker.stdin is not None:
                worker.stdin.close()
            worker.terminate()
            worker.wait(timeout=60)


def _maintain(lake: Any, svc: Searcher, settings: Settings) -> None:
    from memlake.maintenance import maintain_tenant, maintenance_policy
    from tests.wiring import services_for

    t0 = time.perf_counter()
    policy = maintenance_policy(settings, "scheduled")  # every merge due (the operator's: none)
    report = maintain_tenant(services_for(lake, settings, svc), scale_tenant.TENANT, policy)
    print(f"maintenance {time.perf_counter() - t0:.1f} s: {report}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir", type=Path)
    b.add_argument("--size", type=int, default=20_000)
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--queries", type=int, default=200)
    r.add_argument("--maintain", action="store_true")
    r.add_argument("--cache-bytes", type=int, default=None, help="default: the server's")
    p = sub.add_parser("pair")
    p.add_argument("dir", type=Path)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--b", nargs="+", required=True, help="MODULE.NAME=VALUE settings of B")
    v = sub.add_parser("versus")
    v.add_argument("dir", type=Path)
    v.add_argument("--queries", type=int, default=200)
    v.add_argument("--a", type=Path, required=True, help="a checkout (its shared/ is used)")
    v.add_argument("--b", type=Path, required=True, help="another checkout")
    w = sub.add_parser("serve")
    w.add_argument("dir", type=Path)
    w.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    if args.cmd == "versus":
        versus(args.dir, args.queries, {"a": args.a, "b": args.b})
    elif args.cmd == "serve":
        serve(args.dir, args.queries)
    elif args.cmd == "build":
        build(args.dir, args.size)
    elif args.cmd == "pair":
        pair(args.dir, args.queries, args.b)
    else:
        run(args.dir, args.queries, args.maintain, args.cache_bytes)


if __name__ == "__main__":
    main()
