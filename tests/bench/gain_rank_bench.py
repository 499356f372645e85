"""How each row's gain (decision 2508) ranks a shard's code candidates: the rank, among every
code score of one shard, of the rows of the exact 10 best episodes, with code scores alone and
times the gains, for real questions and their calibrated mixes.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/gain_rank_bench.py \\
        [--episodes 4096] [--queries 200]

The shard is tests/bench/vectors.py's realistic passage vectors (20 an episode, as
scale_tenant builds them), trained by ivf.train as the write path trains a tier-2 shard, its
every list probed (so only the ranking of the codes is measured, not the lists). It prints the
median, 90th and 98th percentile ranks and the shares beyond 240 and 480 for each kind, and
the gains' median and spread.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.search.index import ivf, ivf_codes  # noqa: E402
from tests.bench import vectors  # noqa: E402

PER = 20


def ranks(index: ivf.Ivf, x: np.ndarray, doc: np.ndarray, q: np.ndarray, gained: bool) -> list[int]:
    """The code ranks of the best row of each of the exact 10 best episodes for `q`."""
    rows, codes, _ = index.candidates(q.reshape(1, -1), len(x), len(x), None, None, None)
    scores = index.gains.times(rows, codes) if gained else codes
    rank = np.empty(len(x), np.int64)
    rank[rows[np.argsort(-scores, kind="stable")]] = np.arange(len(rows))
    exact = x @ q
    order = np.lexsort((-exact, doc))  # each episode's rows, best first
    firsts = order[np.r_[0, np.flatnonzero(np.diff(doc[order])) + 1]]
    best = firsts[np.argsort(-exact[firsts], kind="stable")[:10]]
    return [int(r) for r in rank[best]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=4096)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    real = vectors.real()
    x = np.ascontiguousarray(vectors.passages(real, args.episodes, PER), np.float32)
    doc = np.repeat(np.arange(args.episodes), PER)
    index = ivf.Ivf(ivf.train(x), x.shape[1])
    gains = np.asarray(index.gains.gain, np.float32)
    out: dict[str, object] = {
        "rows": len(x),
        "gain_median": round(float(np.median(gains)), 3),
        "gain_std": round(float(gains.std()), 3),
    }
    kinds = {
        "real": real.queries[: args.queries],
        "mixed": vectors.mixed_queries(real, args.queries),
    }
    for kind, qs in kinds.items():
        for gained in (False, True):
            r = np.asarray([v for q in qs for v in ranks(index, x, doc, q, gained)])
            out[f"{kind}_{'gained' if gained else 'codes'}"] = {
                "p50": int(np.median(r)),
                "p90": int(np.percentile(r, 90)),
                "p98": int(np.percentile(r, 98)),
                "beyond_240": round(float((r >= 240).mean()), 4),
                "beyond_480": round(float((r >= 480).mean()), 4),
            }
    assert ivf_codes.GAIN_RANGE[0] <= gains.min() and gains.max() <= ivf_codes.GAIN_RANGE[1]
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
