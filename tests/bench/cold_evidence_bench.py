"""Cold searches on the S3 model as search_episodes answers them: ten passages, and evidence
within 8,000 characters (decision 4501), alternating in one process.

    # once: a lake of 10k episodes x 20 realistic vectors, with their chunk rows
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/cold_bench.py \
        build /tmp/c10k --size 10000 --chunks 20
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/cold_evidence_bench.py \
        /tmp/c10k [--cold 12] [--latency 25ms,90MB/s]

Each search runs the tool in a fresh Lake and Searcher (memory caches empty, no disk cache)
over the S3 model (memlake.store.latency: first byte, then bandwidth) and reports per mode the
p50 time, requests, bytes and the sequential round trips on the critical path. Evidence reads
its 20 hits' `episode_chunks` rows for their passage vectors, whole segments on a cold store.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.context import Principal  # noqa: E402
from memlake.embed.minilm import MiniLMEmbedder  # noqa: E402
from memlake.search.query import hit_vectors  # noqa: E402
from memlake.store.latency import LatencyModel, LatencyStore  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from memlake.tools.search_episodes import SearchEpisodesInput, run  # noqa: E402
from tests.wiring import bare_lake, indexed_context  # noqa: E402

TENANT = "bench"
OWN = hit_vectors.stored_passages


def cold(root: Path, query: str, model: LatencyModel, setting: str) -> dict[str, float]:
    mode = "passage" if setting == "passage" else "evidence"
    # "chunk rows": the vectors read from episode_chunks, as before the shards gave them
    hit_vectors.stored_passages = (lambda hits, model: {}) if setting == "chunk rows" else OWN
    store = LatencyStore(LocalStore(root), model)
    lake = bare_lake(store)
    ctx = indexed_context(Principal(TENANT), lake, Settings(data_dir=root), MiniLMEmbedder.shared())
    began = time.perf_counter()
    out = run(ctx, SearchEpisodesInput(query=query, content=mode))
    took = (time.perf_counter() - began) * 1000
    assert out.evidence or out.episodes, query
    stats = store.stats
    return {
        "ms": took,
        "requests": stats.requests,
        "MB": stats.bytes_read / 1e6,
        "depth": stats.depth,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--cold", type=int, default=12)
    parser.add_argument("--latency", default="25ms,90MB/s")
    args = parser.parse_args()
    model = LatencyModel.parse(args.latency)
    queries = json.loads((args.root / "queries.json").read_text())
    MiniLMEmbedder.shared().embed(["warm the model"])
    rows: dict[str, list[dict[str, float]]] = {"passage": [], "evidence": [], "chunk rows": []}
    for i in range(args.cold):
        for name in list(rows)[i % 3 :] + list(rows)[: i % 3]:  # each first in a third
            rows[name].append(cold(args.root, queries[i], model, name))
    for name, got in rows.items():
        med = {k: statistics.median(r[k] for r in got) for k in got[0]}
        print(
            f"{name:<10} cold p50 {med['ms']:7.1f} ms"
            f"  requests {med['requests']:.0f}  {med['MB']:.2f} MB  round trips {med['depth']:.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
