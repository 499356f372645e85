"""Passage aggregation and score fusion, measured on both dev corpora (decision record 1201).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/bench/fusion_grid.py \
        [--corpus sessions conversations] [--quick]

Each corpus is indexed once (quality_bench.build: real MiniLM vectors through the lake's commit
hooks); every grid point then re-runs all questions with other SearchParams (the index holds
episode and passage postings both, so nothing is re-indexed; query vectors are computed once).
Grid: the single retrievers with each aggregation (BM25: episode, best passage, best + 0.5 x
second, 0.5 episode + 0.5 best passage; vectors: best passage, best + 0.5 x second), weighted
RRF (k 1/10/60 x weights, with and without the BM25 confidence weighting shipped in 0301),
convex combination (alpha 0.1..0.9) with theoretical and per-query min-max normalisation, and
the cosine floor. Last, the score distributions behind `min_score`: the top hit's score for
questions whose top hit is relevant, against off-topic questions asked in the same contexts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.search.hybrid import search  # noqa: E402
from memlake.search.query.params import SearchParams  # noqa: E402
from tests.bench import quality_bench  # noqa: E402

OFF_TOPIC = [
    "quantum chromodynamics lattice gauge theory",
    "how do I compile the linux kernel with clang",
    "zzqx vlorp transmogrify",
    "mortgage amortization schedule spreadsheet",
    "photosynthesis in deep sea bacteria",
    "tax treaty between Peru and Finland",
]
KEYS = ("ndcg@10", "recall_all@10", "recall@10")


def load(name: str, quick: bool) -> list[Any]:
    if name == "sessions":
        from tests.bench.sessions import corpus

        return corpus(3, 30, 16, seed=7) if quick else corpus(6, 40, 20, seed=7)
    from tests.bench.conversations import corpus as conversations

    return conversations(3 if quick else 6, seed=11)


def _recall_all(ctx: Any, convs: list[Any], ids: list[str], params: SearchParams) -> float:
    """Share of questions with every relevant session in the top 10 (when the bench lacks it)."""
    at, hit, n = 0, 0, 0
    for conv in convs:
        conv_ids = ids[at : at + len(conv.sessions)]
        at += len(conv.sessions)
        for q in conv.questions:
            got = {h.id for h in _search(ctx, q.text, conv.name, params)}
            hit += {conv_ids[i] for i in q.relevant} <= got
            n += 1
    return hit / max(n, 1)


def _search(ctx: Any, query: str, context: str, params: SearchParams, limit: int = 10) -> Any:
    return search(
        ctx.lake,
        ctx.services.search,
        ctx.tenant,
        query=query,
        limit=limit,
        context=context,
        recency=False,
        params=params,
    )


def measure(ctx: Any, convs: list[Any], ids: list[str], params: SearchParams) -> dict[str, Any]:
    m = dict(quality_bench.evaluate(ctx, convs, ids, params))
    if "recall_all@10" not in m:
        m["recall_all@10"] = _recall_all(ctx, convs, ids, params)
    return m


def row(name: str, m: dict[str, Any]) -> str:
    kinds = m.get("by_kind") or {}
    per = "  ".join(f"{k} {v['ndcg@10']:.3f}/{v['recall_all@10']:.3f}" for k, v in kinds.items())
    cells = " | ".join(f"{m[k]:.3f}" for k in KEYS)
    return f"| {name} | {cells} | {per} |"


def memo_queries(ctx: Any) -> None:
    """Embed each query text once for the whole grid (the bench's searches repeat them)."""
    searcher = ctx.services.search
    embed, seen = searcher.embed_query, {}

    def cached(text: str) -> Any:
        if text not in seen:
            seen[text] = embed(text)
        return seen[text]

    searcher.embed_query = cached


def grid(
    ctx: Any, convs: list[Any], ids: list[str], quick: bool, key: bool = False
) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []

    def run(name: str, params: SearchParams) -> dict[str, Any]:
        m = measure(ctx, convs, ids, params)
        out.append((name, m))
        print(row(name, m), flush=True)
        return m

    bm25_only, vec_only = {"bm25": 1.0, "vector": 0.0}, {"bm25": 0.0, "vector": 1.0}
    for agg in ("episode", "max", "top2", "mix"):
        run(f"BM25 {agg}", SearchParams(weights=bm25_only, bm25_agg=agg))  # type: ignore[arg-type]
    for agg in ("max", "top2"):
        run(f"vector {agg}", SearchParams(weights=vec_only, vec_agg=agg))  # type: ignore[arg-type]
    run("shipped: RRF k=1 conf=0.2, BM25 episode", SearchParams(fusion="rrf", bm25_agg="episode"))
    if key:  # the rows behind the choice only (re-measuring after a change to passages)
        for b, alphas in (("mix", (0.5, 0.6, 0.7, 0.8)), ("episode", (0.6, 0.7)), ("max", (0.7,))):
            for alpha in alphas:
                run(
                    f"convex theory a={alpha} bm25={b} vec=max",
                    SearchParams(alpha=alpha, bm25_agg=b),
                )  # type: ignore[arg-type]
        return out
    for k in (1.0, 10.0, 60.0):
        for wb, wv in ((1.0, 1.0), (1.0, 2.0), (2.0, 1.0)):
            for conf in (None, 0.2):
                p = SearchParams(
                    fusion="rrf", k=k, weights={"bm25": wb, "vector": wv}, confidence_ref=conf
                )
                run(f"RRF k={k:g} w={wb:g}/{wv:g} conf={conf}", p)
    aggs = [("mix", "max")] if quick else []
    aggs = aggs or [(b, v) for b in ("episode", "max", "top2", "mix") for v in ("max", "top2")]
    for norm in ("theory", "minmax"):
        for b, v in aggs:
            for alpha in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
                p = SearchParams(alpha=alpha, norm=norm, bm25_agg=b, vec_agg=v)  # type: ignore[arg-type]
                run(f"convex {norm} a={alpha} bm25={b} vec={v}", p)
    for floor in (0.0, 0.1, 0.3):
        run(f"default, cos_floor={floor}", replace(SearchParams(), cos_floor=floor))
    return out


def distributions(ctx: Any, convs: list[Any], ids: list[str], params: SearchParams) -> None:
    at, rel_top, irr_top, off = 0, [], [], []
    for conv in convs:
        conv_ids = ids[at : at + len(conv.sessions)]
        at += len(conv.sessions)
        for q in conv.questions:
            hits = _search(ctx, q.text, conv.name, params, limit=1)
            if hits:
                relevant = hits[0].id in {conv_ids[i] for i in q.relevant}
                (rel_top if relevant else irr_top).append(hits[0].score)
        for text in OFF_TOPIC:
            hits = _search(ctx, text, conv.name, params, limit=1)
            off.append(hits[0].score if hits else 0.0)

    def show(name: str, v: list[float]) -> None:
        if not v:
            return print(f"  {name}: none")
        q = statistics.quantiles(v, n=20) if len(v) > 1 else [v[0]] * 19
        print(
            f"  {name} (n={len(v)}): min {min(v):.3f}  p5 {q[0]:.3f}"
            f"  p50 {statistics.median(v):.3f}  p95 {q[18]:.3f}  max {max(v):.3f}"
        )

    print("top-hit score distributions (default params):")
    show("questions, top hit relevant", rel_top)
    show("questions, top hit not relevant", irr_top)
    show("off-topic queries", off)
    for t in (0.2, 0.25, 0.3, 0.35):
        kept = sum(s >= t for s in rel_top) / max(len(rel_top), 1)
        dropped = sum(s < t for s in off) / max(len(off), 1)
        print(
            f"  min_score {t}: keeps {kept:.1%} of relevant top hits, drops {dropped:.1%} off-topic"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", nargs="+", default=["sessions", "conversations"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--distributions-only", action="store_true")
    parser.add_argument("--key", action="store_true", help="only the rows behind the choice")
    args = parser.parse_args()
    for name in args.corpus:
        convs = load(name, args.quick)
        t0 = time.perf_counter()
        ctx, ids = quality_bench.build(convs)
        memo_queries(ctx)
        questions = sum(len(c.questions) for c in convs)
        print(f"\n## {name}: {len(ids)} sessions, {questions} questions", flush=True)
        print(f"indexed in {time.perf_counter() - t0:.0f} s\n")
        print(f"| ranking | {' | '.join(KEYS)} | per kind NDCG/recall_all |")
        print("| --- | ---: | ---: | ---: | --- |")
        measured = [] if args.distributions_only else grid(ctx, convs, ids, args.quick, args.key)
        if measured:
            best = sorted(measured, key=lambda nm: -nm[1]["ndcg@10"])[:5]
            print("\nbest by NDCG@10:")
            for n, m in best:
                print(row(n, m))
            print(row("DEFAULT", measure(ctx, convs, ids, SearchParams())))
        distributions(ctx, convs, ids, SearchParams())


if __name__ == "__main__":
    main()
