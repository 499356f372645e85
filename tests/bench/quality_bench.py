"""Retrieval quality of BM25 alone, vectors alone and the fused ranking on long sessions.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/bench/quality_bench.py \
        [--conversations 6] [--sessions 40] [--facts 20] [--seed 7] [--grid fusion|all]

Corpus: tests/bench/sessions.py (generated, deterministic). Every session is stored as an
episode (context = its conversation, started_at = its date, title = its topics) through the
lake's commit hooks, exactly as add_episode/upsert_episode store them: embedded in chunks and
indexed in shards. Each question is searched within its conversation (context filter, recency
off) and scored by recall@5, recall@10 and NDCG@10 against the session(s) holding its facts.
--grid fusion compares the fusion's k, weights and BM25 confidence weighting; --grid all also
re-indexes with other BM25 field weights and chunk sizes (and the whole-session baseline).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.context import Principal, ToolContext  # noqa: E402
from memlake.lake import Transaction  # noqa: E402
from memlake.search import indexing, text  # noqa: E402
from memlake.search.query import SearchParams, search  # noqa: E402
from memlake.services import Services  # noqa: E402
from tests.bench.sessions import Conversation, corpus  # noqa: E402

MODES: dict[str, SearchParams] = {
    "bm25": SearchParams(weights={"bm25": 1.0, "vector": 0.0}),
    "vector": SearchParams(weights={"bm25": 0.0, "vector": 1.0}),
    "fused": SearchParams(),
}


def build(convs: list[Conversation], root: Path | None = None) -> tuple[ToolContext, list[str]]:
    """A fresh local lake holding every session; returns a tool context and ids in order."""
    root = root or Path(tempfile.mkdtemp(prefix="memlake-quality-"))
    settings = Settings(data_dir=root)
    services = Services.build(settings)
    ctx = ToolContext(Principal("quality"), services)
    from memlake.ids import new_id

    ids: list[str] = []
    for conv in convs:
        for body, title, when in zip(conv.sessions, conv.titles, conv.dates, strict=True):
            row = {
                "id": new_id(),
                "content": body,
                "title": title,
                "context": conv.name,
                "started_at": when,
                "created_at": when,
            }

            def change(txn: Transaction, row: dict[str, Any] = row) -> None:
                txn.put("episodes", row)

            services.lake.commit("quality", change)
            ids.append(row["id"])
    return ctx, ids


def _dcg(gains: list[int]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def evaluate(
    ctx: ToolContext, convs: list[Conversation], ids: list[str], params: SearchParams
) -> dict[str, float]:
    at = 0
    r5 = r10 = ndcg = 0.0
    n = 0
    for conv in convs:
        conv_ids = ids[at : at + len(conv.sessions)]
        at += len(conv.sessions)
        for q in conv.questions:
            hits = search(
                ctx.lake,
                ctx.services.search,
                ctx.tenant,
                query=q.text,
                limit=10,
                context=conv.name,
                recency=False,
                params=params,
            )
            got = [h.id for h in hits]
            rel = {conv_ids[i] for i in q.relevant}
            r5 += len(rel & set(got[:5])) / len(rel)
            r10 += len(rel & set(got[:10])) / len(rel)
            ideal = _dcg([1] * min(10, len(rel)))
            ndcg += _dcg([1 if g in rel else 0 for g in got[:10]]) / ideal
            n += 1
    return {"recall@5": r5 / n, "recall@10": r10 / n, "ndcg@10": ndcg / n, "questions": n}


def report(name: str, m: dict[str, float]) -> None:
    print(
        f"{name:<34} recall@5 {m['recall@5']:.3f}  recall@10 {m['recall@10']:.3f}"
        f"  NDCG@10 {m['ndcg@10']:.3f}",
        flush=True,
    )


def run_modes(ctx: ToolContext, convs: list[Conversation], ids: list[str], tag: str) -> None:
    for mode, params in MODES.items():
        report(f"{tag} {mode}", evaluate(ctx, convs, ids, params))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=6)
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--facts", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--grid", choices=["fusion", "all"], default=None)
    args = parser.parse_args()
    convs = corpus(args.conversations, args.sessions, args.facts, seed=args.seed)
    sizes = [len(s.split()) for c in convs for s in c.sessions]
    questions = sum(len(c.questions) for c in convs)
    print(
        f"corpus: {len(convs)} conversations x {args.sessions} sessions, {questions} questions,"
        f" {min(sizes)}-{max(sizes)} words per session (mean {sum(sizes) / len(sizes):.0f})"
    )
    indexing.EMBED_CACHE = 1 << 20  # re-indexing for the grid reuses vectors, as a rebuild does
    t0 = time.perf_counter()
    ctx, ids = build(convs)
    print(f"indexed in {time.perf_counter() - t0:.1f} s (chunks of {indexing.CHUNK_TOKENS} tokens)")
    run_modes(ctx, convs, ids, "default")
    if not args.grid:
        return
    for ref in (None, 0.1, 0.2, 0.3):
        for k in (1.0, 3.0, 10.0, 60.0):
            for wb, wv in ((1.0, 1.0), (1.0, 1.5), (1.5, 1.0)):
                params = SearchParams(k=k, weights={"bm25": wb, "vector": wv}, confidence_ref=ref)
                name = f"fused k={k:g} w_bm25={wb} w_vec={wv} conf={ref}"
                report(name, evaluate(ctx, convs, ids, params))
    if args.grid != "all":
        return
    for weight in (1, 3):
        text.FIELD_WEIGHT = weight
        ctx, ids = build(convs)
        run_modes(ctx, convs, ids, f"field_weight={weight}")
    text.FIELD_WEIGHT = 2
    for tokens, overlap in ((48, 12), (128, 32), (256, 48)):
        indexing.CHUNK_TOKENS, indexing.CHUNK_OVERLAP = tokens, overlap
        ctx, ids = build(convs)
        run_modes(ctx, convs, ids, f"chunks={tokens}/{overlap}")
    indexing.CHUNK_TOKENS, indexing.CHUNK_OVERLAP = 256, 0
    from memlake.embed import chunking

    original = chunking.chunk_for_embedding
    chunking.chunk_for_embedding = lambda *a, **kw: original(*a, **kw)[:1]  # type: ignore
    ctx, ids = build(convs)
    run_modes(ctx, convs, ids, "whole session, first 256 tokens")
    params = SearchParams(k=60.0, confidence_ref=None)
    report("  (same) fused k=60, equal weights", evaluate(ctx, convs, ids, params))


if __name__ == "__main__":
    main()
