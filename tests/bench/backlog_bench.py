"""The deferred embedding pass over many pending long episodes (issue 25, decision 2503).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared .venv/bin/python \\
        tests/bench/backlog_bench.py [--episodes 1000] [--sections 4] [--per-run 256] [--dim 384]

Imports `--episodes` long episodes 50 a commit into a fresh local lake with the commit hooks
on (each commit embeds Settings.embed_sync_passages passages over all it stages, so nearly every
passage is left pending), then runs maintenance as memlake serve's tick does (`--per-run`
passages a run, then compaction) until nothing is pending. Reports the manifest's size with
everything pending, the pass's wall time, its embedding calls, the index shard objects written
(count and bytes) against the final index, and the resident memory. The embedder is a fast
hashed bag of words (tests/integration/test_deferred_vectors.py's), so the numbers are the
pass's own cost, not MiniLM's (~12 ms a passage here, paid alike before and after).

Uses only what both sides of the change have (maintain_tenant and its report), so the "before"
column comes from the same file run with PYTHONPATH at an older checkout.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.context import Principal  # noqa: E402
from memlake.episodes import TABLE  # noqa: E402
from memlake.ids import new_id  # noqa: E402
from memlake.lake import Transaction  # noqa: E402
from memlake.maintenance import MaintenancePolicy, maintain_tenant  # noqa: E402
from memlake.search.index.state import SearchState  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from memlake.timeutil import now  # noqa: E402
from tests.integration.test_deferred_vectors import CountingEmbedder, long_content  # noqa: E402
from tests.wiring import bare_lake, indexed_context  # noqa: E402

T = "bench"
BATCH = 50


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--sections", type=int, default=4)
    ap.add_argument("--per-run", type=int, default=256)
    ap.add_argument("--dim", type=int, default=384)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="backlog-bench-"))
    emb = CountingEmbedder(dim=args.dim)
    settings = Settings(data_dir=root, embed_sync_passages=4)
    lake = bare_lake(LocalStore(root), dim=emb.dim)
    ctx = indexed_context(Principal(T), lake, settings, emb)
    for first in range(0, args.episodes, BATCH):

        def change(txn: Transaction, first: int = first) -> None:
            for i in range(first, min(first + BATCH, args.episodes)):
                at = now()
                content = long_content(sections=args.sections, tail=f"lighthouse{i} keeper{i}")
                row = {"id": new_id(), "content": content, "context": "bulk"}
                txn.put(TABLE, {**row, "created_at": at, "updated_at": at, "started_at": at})

        lake.commit(T, change)
    manifest_pending = len(lake.snapshot(T).manifest.to_bytes())
    written = {"objects": 0, "bytes": 0}
    manifest_max = 0
    real_put = lake.store.put

    def put(key: str, data: bytes, **kw: Any) -> Any:
        nonlocal manifest_max
        if "/search/" in key:
            written["objects"] += 1
            written["bytes"] += len(data)
        if "/manifest" in key:
            manifest_max = max(manifest_max, len(data))
        return real_put(key, data, **kw)

    lake.store.put = put  # type: ignore[method-assign]
    embedded_at_start = emb.passages
    t0 = time.perf_counter()
    runs = left = 0
    # the tick's policy (compaction at 32 segments, merging runs of 16), no GC
    per_run = args.per_run
    policy = MaintenancePolicy(settings.compact_min_segments, 16, per_run, per_run, None)
    while True:
        report = maintain_tenant(ctx.services, T, policy).embedded
        runs += 1
        left = report.left if report is not None else -1
        if left <= 0 or runs > 100_000:
            break
    took = time.perf_counter() - t0
    state = SearchState.from_extra(lake.snapshot(T).extra)
    assert state is not None
    final = sum(s.bytes for s in state.shards)
    out = {
        "episodes": args.episodes,
        "passages_embedded_by_pass": emb.passages - embedded_at_start,
        "runs": runs,
        "pass_s": round(took, 1),
        "ms_per_passage": round(took * 1000 / max(1, emb.passages - embedded_at_start), 2),
        "shard_objects_written": written["objects"],
        "shard_mb_written": round(written["bytes"] / 1e6, 1),
        "final_index_mb": round(final / 1e6, 1),
        "written_over_final": round(written["bytes"] / max(1, final), 1),
        "manifest_kb_all_pending": round(manifest_pending / 1e3, 1),
        "manifest_kb_max_during_pass": round(manifest_max / 1e3, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3),
        "left": left,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
