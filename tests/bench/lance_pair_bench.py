"""Our hybrid search against LanceDB's indexed hybrid on one kept tenant, paired query by query
(issue 25's ratio target, without scale_bench's hour of building per run).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/lance_pair_bench.py \\
        build DIR [--size 300000]
    ... lance_pair_bench.py run DIR [--rounds 2]

- build: first_share_bench's kept tenant in DIR (scale_tenant's realistic passage vectors,
  search_bench's corpus of 600 words an episode, as scale_bench) with the same passages and
  vectors fed to a LanceDB table kept in DIR/lance, then its FTS index and its IVF_HNSW_SQ
  vector index (cosine), as scale_lance builds them in scale_bench. Build times go to
  DIR/lance.json.
- run: a warm Searcher with a 16 GiB shard cache (the tenant held whole, as scale_bench's warm
  searches) and the opened LanceDB table; each of the 200 query texts with its real question
  vector runs hybrid on both, back to back in alternating order, `--rounds` times; then
  vector-only on both the same way. It prints each side's p50, the ratio of the p50s, the
  median of the per-query ratios, and vector recall@10 of both against the exact top-10.

Both searches run in one process at the same moments, so a busy host slows both: the ratio is
what this bench is for, not the absolute times.
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
from memlake.search.index import kernels  # noqa: E402
from memlake.search.query.params import SearchParams  # noqa: E402
from memlake.search.searcher import Searcher  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from tests.bench import first_share_bench, search_bench  # noqa: E402
from tests.bench.scale_lance import Lance  # noqa: E402
from tests.wiring import bare_lake  # noqa: E402

VEC = SearchParams(weights={"bm25": 0.0, "vector": 1.0})


def build(root: Path, size: int) -> None:
    (root / "lance").mkdir(parents=True, exist_ok=True)
    lance = Lance(str(root / "lance"))
    t0 = time.perf_counter()
    first_share_bench.build(root, size, sink=lance.add)
    took = {"build_s": round(time.perf_counter() - t0), "lance_ingest_s": round(lance.took)}
    took["lance_fts_index_s"] = round(lance.index_text())
    took["lance_vector_index_s"] = round(lance.index_vectors())
    (root / "lance.json").write_text(json.dumps(took))
    print("BUILT " + json.dumps(took), flush=True)


def run(root: Path, rounds: int) -> None:
    texts = json.loads((root / "texts.json").read_text())
    qvecs = np.load(root / "queries-real.npy")
    truth = json.loads((root / "truth.json").read_text())
    lake = bare_lake(LocalStore(root))
    svc = Searcher(Settings(), embedder=MiniLMEmbedder.shared(), cache_bytes=16 << 30)
    lance = Lance.open(str(root / "lance"))
    for i in range(20):
        search(lake, svc, search_bench.TENANT, query=texts[i], limit=10)
        lance.hybrid_ms(texts[i], qvecs[i])
    svc.shards.wait_promotions()
    print(f"kernels {kernels.which()}", flush=True)

    def ours(i: int, params: SearchParams | None) -> tuple[float, list[str]]:
        t0 = time.perf_counter()
        hits = search(
            lake, svc, search_bench.TENANT, query=texts[i], limit=10, recency=False,
            query_vector=qvecs[i], params=params or SearchParams(),
        )  # fmt: skip
        return (time.perf_counter() - t0) * 1000, [h.id for h in hits]

    for i in range(len(texts)):  # the first pass adds the lists it probes, opens Lance's pages
        ours(i, None)
        lance.hybrid_ms(texts[i], qvecs[i])
    took: dict[tuple[str, str], list[float]] = {(s, p): [] for s in ("ours", "lance") for p in "hv"}
    ours_eps: dict[int, list[str]] = {}
    lance_eps: dict[int, list[int]] = {}
    for r in range(rounds):
        for i in range(len(texts)):
            for side in ("ours", "lance") if (i + r) % 2 == 0 else ("lance", "ours"):
                if side == "ours":
                    took[(side, "h")].append(ours(i, None)[0])
                else:
                    took[(side, "h")].append(lance.hybrid_ms(texts[i], qvecs[i]))
        for i in range(len(texts)):
            for side in ("ours", "lance") if (i + r) % 2 == 0 else ("lance", "ours"):
                if side == "ours":
                    ms, ours_eps[i] = ours(i, VEC)
                else:
                    ms, lance_eps[i] = lance.vector_episodes(qvecs[i])
                took[(side, "v")].append(ms)
    ids = json.loads((root / "ids.json").read_text())  # LanceDB's rows hold episode numbers
    out: dict[str, Any] = {"queries": len(texts), "rounds": rounds}
    for p, label in (("h", "hybrid"), ("v", "vector_only")):
        a, b = np.asarray(took[("ours", p)]), np.asarray(took[("lance", p)])
        out[f"{label}_p50_ms"] = {"ours": _r(np.median(a)), "lance": _r(np.median(b))}
        out[f"{label}_ratio_of_p50s"] = round(float(np.median(a) / np.median(b)), 3)
        out[f"{label}_median_paired_ratio"] = round(float(np.median(a / b)), 3)
    out["recall@10_ours"] = round(
        statistics.mean(len(set(truth[i]) & set(ours_eps[i])) / 10 for i in ours_eps), 4
    )
    out["recall@10_lance"] = round(
        statistics.mean(
            len(set(truth[i]) & {ids[e] for e in lance_eps[i]}) / 10 for i in lance_eps
        ),
        4,
    )
    print("RESULT " + json.dumps(out), flush=True)


def _r(x: Any) -> float:
    return round(float(x), 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir", type=Path)
    b.add_argument("--size", type=int, default=300000)
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.cmd == "build":
        build(args.dir, args.size)
    else:
        run(args.dir, args.rounds)


if __name__ == "__main__":
    main()
