"""What maintenance's merges cost as a tenant grows one commit of 64 episodes at a time
(decisions 2501 and 2515): each commit's episodes (20 realistic vectors each, vectors.py)
sealed as the write path seals its full tail, then every merge the policy has due
(memlake.search.merge_policy.plan, as the serve tick runs them), each one built by
Layout.merge as merge_shards builds it and timed (CPU seconds of this process), by the tier
it makes: 1 and 2 are folds of the write path's small shards, 3 merges into tier 3.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared .venv/bin/python \\
        tests/bench/fold_bench.py DIR [--episodes 8192]

DIR holds the shard objects written (~1.8 GB at 8,192 episodes); delete it after.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.ids import new_id  # noqa: E402
from memlake.search.episode_docs import episode_doc  # noqa: E402
from memlake.search.index.cache import ShardCache  # noqa: E402
from memlake.search.index.layout import TAIL_DOCS, Layout, merge_plan  # noqa: E402
from memlake.search.index.passages import Embedded  # noqa: E402
from memlake.search.index.shard import Doc  # noqa: E402
from memlake.search.index.state import ShardInfo  # noqa: E402
from memlake.search.merge_policy import MergeRules, plan  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from tests.bench import scale_tenant, search_bench, vectors  # noqa: E402

PER = scale_tenant.PER


def _docs(real: vectors.Real, first: int, no: int) -> list[Doc]:
    rows = [
        {"id": new_id(), "content": search_bench.episode_text(i), "context": "c"}
        for i in range(first, first + TAIL_DOCS)
    ]
    flat = np.asarray(vectors.passages(real, TAIL_DOCS, PER, seed=1000 + no), np.float32)
    spans = [scale_tenant.windows(r["content"], PER) for r in rows]
    return [
        episode_doc(r["id"], r, no + 1, Embedded("", s, e, flat[j * PER : (j + 1) * PER]))
        for j, (r, (s, e)) in enumerate(zip(rows, spans, strict=True))
    ]


def run(root: Path, episodes: int) -> dict[str, Any]:
    store, real, rules = LocalStore(root), vectors.real(), MergeRules.for_tier(3)
    held: list[ShardInfo] = []
    merges: dict[int, dict[str, float]] = {}
    writes = 0  # the write path's own merges (inside a commit): none while maintenance folds
    for no, first in enumerate(range(0, episodes, TAIL_DOCS)):
        writer = Layout(ShardCache(0), store, "bench", no + 1, "m")
        held.append(writer.seal(_docs(real, first, no)))  # tier 0, as a sealed tail
        while (span := merge_plan(tuple(held))) is not None:
            a, b = span
            held[a:b] = [writer.merge(held[a:b], held[a].tier + 1)]
            writes += 1
        while (due := plan(tuple(held), rules)) is not None:
            t0 = time.process_time()
            merged = writer.merge(held[due.start : due.end], due.tier)
            took = merges.setdefault(due.tier, {"merges": 0, "docs_written": 0, "cpu_s": 0.0})
            took["merges"] += 1
            took["docs_written"] += merged.docs
            took["cpu_s"] += time.process_time() - t0
            held[due.start : due.end] = [merged]
    return {
        "episodes": episodes,
        "layout": [(s.docs, s.tier) for s in held],
        "write_path_merges": writes,
        "by_tier": {t: {**m, "cpu_s": round(m["cpu_s"], 1)} for t, m in sorted(merges.items())},
        "cpu_s_per_1000_episodes": round(
            sum(m["cpu_s"] for m in merges.values()) * 1000 / episodes, 1
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", type=Path)
    ap.add_argument("--episodes", type=int, default=8192)
    args = ap.parse_args()
    print(json.dumps(run(args.dir, args.episodes)), flush=True)


if __name__ == "__main__":
    main()
