"""How episodes are cut into passages, measured: fixed token windows vs turn-aware passages.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/bench/passages_grid.py \
        [--corpus sessions|conversations] [--budgets 64,96,128] [--no-windows]

For each cut the corpus is indexed through the lake's commit hooks (tests/bench/quality_bench
.build) and every question searched within its conversation by BM25 alone, vectors alone and
the fused ranking; it prints NDCG@10, recall@10, recall_all@10 (share of questions with every
relevant session in the top 10) and passages per 1,000-word session. "windows" is the cut before
docs/decisions/1205 (64-token windows overlapping 16, across speakers); "turns N" is
memlake.embed.turns with a budget of N word pieces including [CLS]/[SEP].
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.embed.chunking import chunk_for_embedding  # noqa: E402
from memlake.embed.minilm import MiniLMEmbedder  # noqa: E402
from memlake.embed.turns import Measure, Span, TokenMeasure, spans  # noqa: E402
from memlake.search.index import passages  # noqa: E402
from tests.bench.quality_bench import MODES, build, evaluate  # noqa: E402

Cut = Callable[[str, int, Measure], list[Span]]


def windows(text: str, budget: int, measure: Measure) -> list[Span]:
    """The cut before turn-aware passages: 64-token windows overlapping 16 tokens."""
    tokenizer = measure.tokenizer if isinstance(measure, TokenMeasure) else None
    assert tokenizer is not None, "windows need a local tokenizer"
    return [(c.start_char, c.end_char) for c in chunk_for_embedding(text, tokenizer, 64, 16)]


def load(name: str) -> list[Any]:
    if name == "sessions":
        from tests.bench.sessions import corpus

        return corpus(6, 40, 20, seed=7)
    from tests.bench.conversations import corpus as conversations  # type: ignore[import-not-found]

    return list(conversations())


def run(name: str, convs: list[Any], cut: Cut, tokens: int) -> None:
    passages.spans, passages.CHUNK_TOKENS = cut, tokens  # type: ignore[assignment]
    model = MiniLMEmbedder.shared()
    bodies = [s for c in convs for s in c.sessions]
    count = sum(len(passages.plan({"content": s}, model)) for s in bodies)
    words = sum(len(s.split()) for s in bodies)
    t0 = time.perf_counter()
    ctx, ids = build(convs)
    took = time.perf_counter() - t0
    cells = []
    for mode in ("bm25", "vector", "fused"):
        m = evaluate(ctx, convs, ids, MODES[mode])
        cells.append(f"{mode} {m['ndcg@10']:.3f}/{m['recall@10']:.3f}/{m['recall_all@10']:.3f}")
    per_1k = 1000 * count / words
    print(f"{name:<10} {per_1k:5.1f} passages/1k words  {'  '.join(cells)}  ({took:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", choices=["sessions", "conversations"], default="sessions")
    parser.add_argument("--budgets", default="64,96,128")
    parser.add_argument("--no-windows", action="store_true")
    args = parser.parse_args()
    convs = load(args.corpus)
    questions = sum(len(c.questions) for c in convs)
    print(f"{args.corpus}: {len(convs)} conversations, {questions} questions")
    print("cut        density               NDCG@10/recall@10/recall_all@10 per ranking")
    if not args.no_windows:
        run("windows", convs, windows, 64)
    for tokens in (int(b) for b in args.budgets.split(",")):
        run(f"turns {tokens}", convs, spans, tokens)


if __name__ == "__main__":
    main()
