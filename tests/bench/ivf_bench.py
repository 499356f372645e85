"""IVF-SQ8 sealed shards (shard format 3, docs/decisions/1301): write cost, search time, recall.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/bench/ivf_bench.py \
        [--train 10000 40000 81920] [--grid-rows 81920] [--rows-per-list 64 128 256] \
        [--shards 25] [--nprobe 8 16 32 64] [--filters 0.01 0.05 0.2] [--queries 100]

Vectors: tests/bench/vectors.py's realistic passage vectors (20 per episode), queries its real
questions. Each part is optional (0 / empty skips it):

- `--train`: shard_build.build time of one shard of that many vector rows, and the IVF training
  (k-means on a sample, assignment, SQ8 codes) inside it.
- `--grid-rows`: one shard of that many rows built once per `--rows-per-list`; per nprobe the
  p50 of `Shard.vector_top(q, None, 30)` and episode recall@10 against an exact scan, next to
  the SQ8 flat scan of format 2 (trained at load) and an exact float32 scan.
- `--shards`: that many 4,096-episode shards (one per tier-2 merge, 81,920 rows each) built
  with the module's constants; per nprobe the p50 of the summed vector_top over every shard
  (the search's vector part), its per-shard p50, and recall@10 of the merged top 10.
- `--plan`: the same shards (`--corpus iid`: every shard drawn alike, the plan's worst case;
  `drift`: shard i's episodes from a sliding window of real sessions, topics drifting over
  time as a tenant's do), each query's variants interleaved in one run: every shard probing
  its own `--nprobe` lists, and the probe plan across shards (ivf.plan_probes, decision 1303)
  for each `--per-shard` (lists per shard on average: the budget) x `--most`: p50 of the
  whole vector part (plan included), recall@10, lists probed, shards skipped, and the exact
  top-10 docs in skipped shards.
  `--cache DIR` keeps the built shards between runs.
- `--filters`: on the first shard, vector_top p50 with a doc filter allowing that share of
  docs, scanned through the IVF (probes widened as needed) and exactly (ivf.EXACT_BELOW).
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.search.index import ivf  # noqa: E402
from memlake.search.index.shard import K1, B, Doc, Shard  # noqa: E402
from memlake.search.index.shard_build import build  # noqa: E402
from tests.bench import vectors  # noqa: E402

PER = 20  # passages (vector rows) per episode
CAND = 30  # SearchParams.candidates: docs asked per shard
Plan = tuple[int, int]  # lists per shard, most of one shard (ivf.plan_probes)


def make_shard(x: np.ndarray) -> tuple[Shard, float, float]:
    """A shard of `x` (PER rows a doc): (shard, build seconds, of which IVF training)."""
    n = len(x) // PER
    one = [(0, 1, ["w"])] * PER
    docs = [
        Doc(f"e{i:06d}", i, i, i, None, ["w"], x[i * PER : (i + 1) * PER], passages=one)
        for i in range(n)
    ]
    spent: list[float] = []
    real_train = ivf.train

    def timed(v: Any, seed: int = 1234) -> Any:
        t = time.perf_counter()
        out = real_train(v, seed)
        spent.append(time.perf_counter() - t)
        return out

    ivf.train = timed  # type: ignore[assignment]
    try:
        t = time.perf_counter()
        data = build(docs, model="m", dim=x.shape[1])
        took = time.perf_counter() - t
    finally:
        ivf.train = real_train  # type: ignore[assignment]
    return Shard.from_bytes(data), took, sum(spent)


def p50(fn: Callable[[np.ndarray], Any], qs: np.ndarray) -> tuple[float, list[Any]]:
    for q in qs[:5]:
        fn(q)  # warm: lists added, faiss loaded
    times, out = [], []
    for q in qs:
        t = time.perf_counter()
        out.append(fn(q))
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3, out


def exact_top(parts: list[np.ndarray], qs: np.ndarray, k: int = 10) -> list[set[int]]:
    """Global doc numbers of the exact top-k docs (best row per doc) for each query."""
    best = []
    for x in parts:
        sims = np.concatenate([x[i : i + 65536] @ qs.T for i in range(0, len(x), 65536)])
        best.append(sims.reshape(-1, PER, len(qs)).max(axis=1))
    allb = np.concatenate(best)
    return [set(np.argsort(-allb[:, j])[:k].tolist()) for j in range(len(qs))]


def recall(found: list[set[int]], truth: list[set[int]]) -> float:
    return float(np.mean([len(f & t) / len(t) for f, t in zip(found, truth, strict=True)]))


def merged(shards: list[Shard], q: np.ndarray) -> set[int]:
    docs, scores = [], []
    start = 0
    for s in shards:
        d, sc, _, _ = s.vector_top(q, None, CAND)
        docs.append(d + start)
        scores.append(sc)
        start += s.n
    d, sc = np.concatenate(docs), np.concatenate(scores)
    return set(d[np.argsort(-sc)[:10]].tolist())


def with_nprobe(nprobe: int) -> Any:
    old, ivf.NPROBE = ivf.NPROBE, nprobe
    return old


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", type=int, nargs="*", default=[10_000, 40_000, 81_920])
    parser.add_argument("--grid-rows", type=int, default=81_920)
    parser.add_argument("--rows-per-list", type=int, nargs="*", default=[64, 128, 256])
    parser.add_argument("--shards", type=int, default=25)
    parser.add_argument("--nprobe", type=int, nargs="+", default=[8, 16, 32, 64])
    parser.add_argument("--filters", type=float, nargs="*", default=[0.01, 0.02, 0.05, 0.2])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--plan", action="store_true")
    parser.add_argument("--corpus", choices=("iid", "drift"), default="iid")
    parser.add_argument("--per-shard", type=int, nargs="*", default=[16, 24, 32, 40, 48, 56])
    parser.add_argument("--most", type=int, nargs="*", default=[64, 128])
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args()
    real = vectors.real()
    qs = vectors.queries(real, args.queries)
    print(
        f"IVF constants: {ivf.ROWS_PER_LIST} rows/list, NPROBE {ivf.NPROBE}, train sample "
        f"{ivf.TRAIN_PER_LIST}/list, {ivf.NITER} iterations, by_residual {ivf.BY_RESIDUAL}"
    )

    for rows in args.train:
        x = vectors.passages(real, rows // PER, PER, seed=rows)
        _, took, trained = make_shard(x)
        print(f"build {rows} rows: {took:.2f} s, of which IVF training {trained:.2f} s", flush=True)

    if args.grid_rows:
        x = vectors.passages(real, args.grid_rows // PER, PER, seed=1)
        truth = exact_top([x], qs)
        t = time.perf_counter()
        flat = Shard({**_arrays(make_shard(x)[0]), "header": _header(2)})
        flat_ms, out = p50(lambda q: flat.vector_top(q, None, CAND), qs)
        print(
            f"\n{args.grid_rows} rows, SQ8 flat (format 2; first search builds it in "
            f"{time.perf_counter() - t:.1f} s incl. shard): p50 {flat_ms:.2f} ms, "
            f"recall@10 {recall([set(o[0][:10].tolist()) for o in out], truth):.3f}"
        )
        ex_ms, _ = p50(lambda q: (x @ q).reshape(-1, PER).max(axis=1).argsort()[-10:], qs)
        print(f"exact float32 numpy scan: p50 {ex_ms:.2f} ms")
        default = ivf.ROWS_PER_LIST
        for rpl in args.rows_per_list:
            ivf.ROWS_PER_LIST = rpl
            shard, took, trained = make_shard(x)
            cells = []
            for nprobe in args.nprobe:
                old = with_nprobe(nprobe)
                ms, out = p50(lambda q, s=shard: s.vector_top(q, None, CAND), qs)
                ivf.NPROBE = old
                got = recall([set(o[0][:10].tolist()) for o in out], truth)
                cells.append(f"nprobe {nprobe}: {ms:.2f} ms, recall {got:.3f}")
            print(
                f"rows/list {rpl} (nlist {ivf.nlist_for(len(x))}, build {took:.1f} s, "
                f"training {trained:.1f} s): " + "; ".join(cells),
                flush=True,
            )
        ivf.ROWS_PER_LIST = default

    if args.shards:
        shards = corpus_shards(real, args.shards, args.corpus, args.cache)
        total = sum(len(s.vectors) for s in shards)
        print(f"\n{args.shards} shards ({args.corpus}), {total} rows", flush=True)
        truth = exact_top([s.vectors for s in shards], qs)
        if args.plan:
            plan_grid(shards, qs, truth, args)
        for nprobe in args.nprobe if not args.plan else []:
            old = with_nprobe(nprobe)
            ms, found = p50(lambda q: merged(shards, q), qs)
            one, _ = p50(lambda q: shards[0].vector_top(q, None, CAND), qs)
            ivf.NPROBE = old
            print(
                f"nprobe {nprobe}: vector part p50 {ms:.1f} ms (one shard {one:.2f} ms), "
                f"recall@10 {recall(found, truth):.3f}",
                flush=True,
            )
        first = shards[0]
    elif args.filters:
        first = make_shard(vectors.passages(real, 4096, PER, seed=100))[0]
    for share in args.filters:
        mask = np.random.default_rng(5).random(first.n) < share
        rows = int(mask[first.chunk_doc].sum())
        cells = []
        for label, below in (("ivf", -1), ("exact", 10**9)):
            old, ivf.EXACT_BELOW = ivf.EXACT_BELOW, below
            ms, _ = p50(lambda q, m=mask: first.vector_top(q, m, CAND), qs)
            ivf.EXACT_BELOW = old
            cells.append(f"{label} {ms:.2f} ms")
        print(f"filter {share:.1%} of docs ({rows} rows): " + ", ".join(cells), flush=True)


def corpus_shards(real: Any, n: int, kind: str, cache: Path | None) -> list[Shard]:
    """n shards of 4,096 episodes: drawn alike (iid) or from drifting session windows."""
    out = []
    for i in range(n):
        path = None if cache is None else cache / f"{kind}-{i}.npz"
        if path is not None and path.exists():
            out.append(Shard.from_bytes(path.read_bytes()))
            continue
        source = real
        if kind == "drift":  # a window of a sixth of the sessions, sliding over them
            g = len(real.groups)
            lo = i * (g - g // 6) // max(1, n - 1)
            source = vectors.Real(real.passages, real.groups[lo : lo + g // 6], real.queries)
        x = vectors.passages(source, 4096, PER, seed=100 + i)
        shard = make_shard(x)[0]
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            sink = io.BytesIO()
            np.savez(sink, **_saved(shard))
            path.write_bytes(sink.getvalue())
        out.append(shard)
        del x
    return out


def _saved(shard: Shard) -> dict[str, Any]:
    """A loaded shard's arrays again (format 3), to cache it."""
    held = shard.ivf_index()
    assert held is not None
    out = {**_arrays(shard), "header": _header(3), **held._arrays}
    return out


def plan_vector_part(shards: list[Shard], q: np.ndarray, plan: Plan | None) -> Any:
    """The search's vector part: (merged top 10, lists probed, shards skipped); `plan` is
    (lists per shard, most) of the probe plan, None: every shard its own ivf.NPROBE lists."""
    probes: list[Any] = [None] * len(shards)
    if plan is not None:
        ivfs: Any = [s.ivf_index() for s in shards]
        per, most = plan
        probes = ivf.plan_probes(ivfs, q.reshape(1, -1), per * len(shards), 0, most)
    docs, scores, lists, skipped, start = [], [], 0, [], 0
    for no, (s, p) in enumerate(zip(shards, probes, strict=True)):
        if p is not None and not len(p):
            skipped.append(no)
        else:
            d, sc, _, _ = s.vector_top(q, None, CAND, p)
            docs.append(d + start)
            scores.append(sc)
            lists += ivf.NPROBE if p is None else len(p)
        start += s.n
    d, sc = np.concatenate(docs), np.concatenate(scores)
    return set(d[np.argsort(-sc)[:10]].tolist()), lists, skipped


def gap_report(shards: list[Shard], qs: np.ndarray, truth: list[set[int]]) -> None:
    """How far below the best centroid (over all shards) the lists holding the exact top-10
    rows score, and their rank among all lists: what a score margin or a budget must cover."""
    starts = np.cumsum([0] + [s.n for s in shards])
    owner = []
    for s in shards:
        held: Any = s.ivf_index()
        of = np.empty(len(s.vectors), np.int64)
        of[held._arrays["ivf_rows"]] = np.repeat(np.arange(held.nlist), np.diff(held.offsets))
        owner.append(of)
    gaps, ranks = [], []
    for q, docs in zip(qs, truth, strict=True):
        cents = [s.ivf_index().centroids @ q for s in shards]  # type: ignore[union-attr]
        every = np.sort(np.concatenate(cents))[::-1]
        for g in docs:
            no = int(np.searchsorted(starts, g, side="right") - 1)
            d, s = g - starts[no], shards[no]
            rows = np.arange(d * PER, (d + 1) * PER)
            row = rows[np.argmax(s.vectors[rows] @ q)]
            score = cents[no][owner[no][row]]
            gaps.append(every[0] - score)
            ranks.append(int((every > score).sum()) + 1)
    pct = (50, 90, 99, 100)
    print(
        "lists holding the exact top-10 rows: gap below the best centroid "
        + ", ".join(f"p{p} {np.percentile(gaps, p):.3f}" for p in pct)
        + "; global rank "
        + ", ".join(f"p{p} {np.percentile(ranks, p):.0f}" for p in pct),
        flush=True,
    )


def plan_grid(shards: list[Shard], qs: np.ndarray, truth: list[set[int]], args: Any) -> None:
    gap_report(shards, qs, truth)
    variants: list[tuple[str, int, Plan | None]] = [
        (f"own nprobe {n}", n, None) for n in args.nprobe
    ]
    variants += [
        (f"plan {b}/shard most {m}", ivf.NPROBE, (b, m)) for b in args.per_shard for m in args.most
    ]
    starts = np.cumsum([0] + [s.n for s in shards])
    times: dict[str, list[float]] = {v[0]: [] for v in variants}
    found: dict[str, list[set[int]]] = {v[0]: [] for v in variants}
    lists: dict[str, list[int]] = {v[0]: [] for v in variants}
    lost: dict[str, list[int]] = {v[0]: [] for v in variants}
    skips: dict[str, list[int]] = {v[0]: [] for v in variants}
    for j, q in enumerate(np.concatenate([qs[:5], qs])):
        for turn in range(len(variants)):  # rotated: no variant always runs first
            name, nprobe, plan = variants[(j + turn) % len(variants)]
            old = with_nprobe(nprobe)
            t = time.perf_counter()
            top, probed, skipped = plan_vector_part(shards, q, plan)
            took = time.perf_counter() - t
            ivf.NPROBE = old
            if j < 5:
                continue  # warm-up: lists added, faiss loaded
            times[name].append(took)
            found[name].append(top)
            lists[name].append(probed)
            skips[name].append(len(skipped))
            shard_of = np.searchsorted(starts, list(truth[j - 5]), side="right") - 1
            lost[name].append(int(np.isin(shard_of, skipped).sum()))
    for name, *_ in variants:
        print(
            f"{name}: vector part p50 {np.median(times[name]) * 1e3:.1f} ms, recall@10 "
            f"{recall(found[name], truth):.3f}, lists {np.mean(lists[name]):.0f}, shards "
            f"skipped {np.mean(skips[name]):.1f}, top-10 docs in skipped shards "
            f"{np.sum(lost[name])} of {10 * len(truth)}",
            flush=True,
        )


def _arrays(shard: Shard) -> dict[str, Any]:
    """The shard's arrays as format 2 stores them (no IVF arrays)."""
    names = ("ids", "vocab") + tuple(
        n
        for n in ("seq", "t_start", "t_end", "ctx", "doc_len", "indptr", "indices", "tf")
        + ("vectors", "chunk_doc", "p_doc", "p_start", "p_end", "p_len", "p_indptr")
        + ("p_indices", "p_tf", "chunk_passage")
    )
    from memlake.search.index.shard import _blob

    out: dict[str, Any] = {n: getattr(shard, n) for n in names[2:]}
    out["ids"] = _blob(shard.id_list)
    out["vocab"] = _blob(shard.vocab)
    return out


def _header(fmt: int) -> np.ndarray:
    import json

    head = {"format": fmt, "model": "m", "dim": vectors.DIM, "k1": K1, "b": B}
    return np.frombuffer(json.dumps({**head, "contexts": []}).encode(), np.uint8)


if __name__ == "__main__":
    main()
