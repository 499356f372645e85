"""add_episode at the content limit (256 KiB) with the MiniLM embedder: wall and CPU time.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/bench/long_content_bench.py [--runs 3]

Each run adds one episode of realistic English text just under Settings.max_content_bytes to a
fresh local lake through the tool layer (what /mcp runs after JSON parsing), after one warm-up
add (model loaded), and reports wall time, process CPU time, passages embedded during the call
and the vectors_pending it answered. Then, where the code has the deferred pass
(memlake.search.backfill), it times the pass that embeds the rest. Prints one JSON line per run
and the medians. Run it against an older checkout with PYTHONPATH=<checkout>/shared to compare.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.services import Services
from memlake.tools import add_episode

SENTENCES = [
    "We reviewed the deployment pipeline and found that the cache key changed after the upgrade.",
    "The integration stage timed out twice, so the team rolled back the release.",
    "Database migrations ran in the wrong order because two branches changed one table.",
    "We agreed to pin the container base image and to rebuild it weekly with patches.",
    "Latency on the checkout service rose during the sale; autoscaling reacted too slowly.",
    "The user asked how to rotate API keys without downtime for the mobile clients.",
    "Assistant: split the rollout into two phases and keep the old key valid for a day.",
    "Next time we should write the incident summary before the retrospective meeting.",
]


class Counting:
    """Wraps the embedder and counts the passages it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.passages = inner, 0
        self.name, self.dim, self.max_tokens = inner.name, inner.dim, inner.max_tokens
        self.raw_tokenizer = getattr(inner, "raw_tokenizer", None)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.passages += len(texts)
        return self.inner.embed(texts)  # type: ignore[no-any-return]


def content(limit: int, seed: int) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while True:
        s = f"{rng.choice(SENTENCES)} (step {rng.randint(1, 10_000)})"
        if size + len(s) + 1 > limit - 64:
            return " ".join(parts)
        parts.append(s)
        size += len(s) + 1


def one_run(seed: int) -> dict[str, Any]:
    from memlake.embed import make_embedder

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp))
        services = Services.build(settings)
        svc = services.search
        counting = Counting(make_embedder("minilm"))
        svc._embedder = counting  # type: ignore[assignment]
        ctx = ToolContext(Principal("bench"), services)
        spec = add_episode.SPEC
        spec.run(ctx, spec.input_model(content="warm-up: the model loads here"))
        counting.passages = 0
        text = content(settings.max_content_bytes, seed)
        args = spec.input_model(content=text)
        wall, cpu = time.perf_counter(), time.process_time()
        out = spec.run(ctx, args).model_dump()
        row: dict[str, Any] = {
            "bytes": len(text.encode()),
            "wall_s": round(time.perf_counter() - wall, 3),
            "cpu_s": round(time.process_time() - cpu, 3),
            "passages_in_call": counting.passages,
            "vectors_pending": out.get("vectors_pending"),
        }
        try:
            from memlake.search.backfill import embed_pending
        except ImportError:  # an older checkout: everything was embedded in the call
            return row
        counting.passages = 0
        wall, cpu = time.perf_counter(), time.process_time()
        report = embed_pending(services.lake, "bench", max_passages=1_000_000)
        row.update(
            pass_wall_s=round(time.perf_counter() - wall, 3),
            pass_cpu_s=round(time.process_time() - cpu, 3),
            pass_passages=counting.passages,
            pass_commits=report.commits,
            left=report.left,
        )
        return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for i in range(args.runs):
        rows.append(one_run(seed=i))
        print(json.dumps(rows[-1]), flush=True)
    keys = [k for k, v in rows[0].items() if isinstance(v, (int, float)) and v is not None]
    print(json.dumps({"median": {k: statistics.median(r[k] for r in rows) for k in keys}}))


if __name__ == "__main__":
    main()
