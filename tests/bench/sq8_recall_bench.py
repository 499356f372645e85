"""Recall of the SQ8 scan with exact re-score at sizes the lake bench cannot hold in memory.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/bench/sq8_recall_bench.py \
        [--episodes 100000] [--chunks 20] [--shards 30] [--rescore 1 2 3]

Emulates `Shard.vector_top` / `Shard._nearest` of memlake.search.index (decision 1202) without
a lake: `--shards` equal shards of tests/bench/vectors.py's realistic vectors, each a FAISS
`IndexScalarQuantizer` QT_8bit; per shard it asks for `want` = 30 candidates x 4 rows, takes
want x RESCORE rows from the codes, re-scores them exactly, keeps each episode's best row (four
times more rows while fewer than 30 episodes are found), then merges the shards' episodes by
exact cosine. Reports episode recall@10 against an exact numpy scan of every row, per RESCORE,
and the codes' own row recall@10 on the first shard (no re-score). Queries: the dev corpora's
real questions (100). 100k episodes x 20 needs ~4 GB (one shard: ~6.3 GB) and ~2 minutes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench import vectors  # noqa: E402

CANDIDATES = 30  # SearchParams.candidates
ROWS_PER_DOC_WANTED = 4  # memlake.search.index


def main() -> None:
    import faiss

    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--shards", type=int, default=30)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rescore", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    per = args.chunks
    real = vectors.real()
    x = vectors.passages(real, args.episodes, per)
    qs = vectors.queries(real, args.queries)
    bounds = np.linspace(0, args.episodes, args.shards + 1).astype(int)
    shards = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        qt, ip = faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        index = faiss.IndexScalarQuantizer(x.shape[1], qt, ip)
        rows = x[a * per : b * per]
        index.train(rows)
        index.add(rows)
        shards.append((int(a), index))
    print(f"{len(x)} rows in {args.shards} shards", flush=True)

    def found(q: np.ndarray, rescore: int) -> set[int]:
        best: dict[int, float] = {}
        for start, index in shards:
            want = CANDIDATES * ROWS_PER_DOC_WANTED
            while True:
                _, idx = index.search(q[None], want * rescore)
                rows = idx[0][idx[0] >= 0]
                exact = x[start * per + rows] @ q
                order = np.argsort(-exact, kind="stable")[:want]
                rows, exact = rows[order], exact[order]
                docs = rows // per
                _, first = np.unique(docs, return_index=True)
                first.sort()
                if len(first) >= CANDIDATES or want * rescore >= index.ntotal:
                    break
                want *= 4
            for j in first[:CANDIDATES]:
                best[start + int(docs[j])] = float(exact[j])
        return set(sorted(best, key=lambda d: -best[d])[:10])

    truth = []
    for q in qs:
        scores = (x @ q).reshape(-1, per).max(axis=1)
        truth.append(set(np.argpartition(-scores, 10)[:10].tolist()))
    for rescore in args.rescore:
        recall = [len(found(q, rescore) & t) / 10 for q, t in zip(qs, truth, strict=True)]
        print(f"RESCORE {rescore}: episode recall@10 mean {np.mean(recall):.4f}, min {min(recall)}")
    first_rows = x[: bounds[1] * per]
    _, idx = shards[0][1].search(qs, 10)
    exact_rows = np.argsort(-(qs @ first_rows.T), axis=1)[:, :10]
    raw = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(idx, exact_rows, strict=True)])
    print(f"codes alone, row recall@10 on shard 0 ({len(first_rows)} rows): {raw:.3f}")


if __name__ == "__main__":
    main()
