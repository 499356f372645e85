"""The probe plan's centroid scores, kernel against BLAS (decision 2507): `coarse_scores` over
int8 centroids at each CPU level, side by side with numpy's float32 product over the same
centroids, in one run (each level in a child process: numba sets up one CPU a process).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/coarse_kernel_bench.py \\
        [--centroids 15600 46800] [--dim 384] [--repeat 100]

Random centroids in shards of ~4,250 (a 300k tenant's 11 shards hold 46,800), one query; the
p50 of `--repeat` calls over all shards, warm (the arrays fit this machine's caches; in a
search, among its other reads, both are slower). The kernels come from the kernel cache
(`memlake warm-kernels`), compiled here if it lacks them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "shared"))

SHARD = 4254


def _p50(fn: object, repeat: int) -> float:
    took = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        took.append(time.perf_counter() - t0)
    return round(1000 * float(np.median(took)), 3)


def child(centroids: list[int], dim: int, repeat: int) -> None:
    from memlake.config import kernel_settings
    from memlake.search.index import ivf_coarse, kernels

    nk = kernels.load(replace(kernel_settings(), mode="numba"))
    rng = np.random.default_rng(0)
    out = {"level": kernels.report().get("level")}
    for n in centroids:
        shards = [rng.standard_normal((min(SHARD, n - lo), dim)).astype(np.float32)
                  for lo in range(0, n, SHARD)]  # fmt: skip
        made = [ivf_coarse.quantise(c) for c in shards]
        q = rng.standard_normal(dim).astype(np.float32)
        q16, q_scale = ivf_coarse.query16(q)
        out[f"int8_{n}_ms"] = _p50(
            lambda m=made, q16=q16, qs=q_scale: [
                nk.coarse_scores(x.codes, q16, x.scale, qs) for x in m
            ],
            repeat,
        )
        out[f"blas_{n}_ms"] = _p50(lambda s=shards, q=q: [c @ q for c in s], repeat)
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--centroids", type=int, nargs="+", default=[15600, 46800])
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.centroids, args.dim, args.repeat)
        return
    from memlake.search.index import kernels

    for level in kernels.build_levels():
        command = [sys.executable, __file__, "--child", "--dim", str(args.dim), "--repeat",
                   str(args.repeat), "--centroids", *map(str, args.centroids)]  # fmt: skip
        env = {**os.environ, "NUMBA_CPU_NAME": level}
        got = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        print("RESULT " + got.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
