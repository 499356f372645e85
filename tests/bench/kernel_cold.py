"""What numba's kernels cost a fresh process (decision 2502): `import numba`, loading the
kernels from a cache built ahead, and the first search of a new process on a scale tenant
(scale_grid.py build) under each MEMLAKE_KERNELS, as a Lambda function's first search sees it:
the package and the seed cache read-only (another user's files), the kernel cache a fresh
writable directory the seed is copied into.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared .venv/bin/python \\
        tests/bench/kernel_cold.py DIR [--runs 5] [--user nobody]

It copies shared/ and tests/ to a scratch folder, builds the seed there with `memlake
warm-kernels`, and runs each child as --user (setpriv) when running as root, so that nothing
the children read is writable to them. Each child: imports, the first search (query text
embedded by MiniLM, as a tool call would), then the kernels loaded (auto: on their thread
while the first search ran), then a second search. Medians over --runs new processes.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from memlake.config import Settings
from memlake.embed.minilm import MiniLMEmbedder
from memlake.search.hybrid import search
from memlake.search.index import kernels
from memlake.search.searcher import Searcher
from memlake.store.local import LocalStore
from tests.bench import scale_tenant
from tests.wiring import bare_lake
t1 = time.perf_counter()
root, texts = sys.argv[1], json.loads(open(sys.argv[1] + "/queries.json").read())
lake = bare_lake(LocalStore(root))
svc = Searcher(Settings(), embedder=MiniLMEmbedder.shared())
search(lake, svc, scale_tenant.TENANT, query=texts[0], limit=10, recency=False)
t2 = time.perf_counter()
first = kernels.active().__name__.rsplit(".", 1)[-1]
kernels.wait()
t3 = time.perf_counter()
search(lake, svc, scale_tenant.TENANT, query=texts[1], limit=10, recency=False)
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_search_s": t2 - t1, "kernels_after_s": t3 - t0,
                  "second_search_s": t4 - t3, "first_search_kernels": first,
                  "report": kernels.report()}))
"""

NUMBA = r"""
import json, time
t0 = time.perf_counter(); import numpy, scipy.sparse; t1 = time.perf_counter()
import numba; t2 = time.perf_counter()
from memlake.search.index import kernels; from memlake.config import kernel_settings
kernels.load(kernel_settings()); t3 = time.perf_counter()
print(json.dumps({"numpy_scipy_s": t1 - t0, "import_numba_s": t2 - t1, "kernels_load_s": t3 - t2,
                  "report": kernels.report()}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--user", default="nobody")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="memlake-kernel-cold-"))
    try:
        run(args.root.resolve(), args.runs, args.user, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run(root: Path, runs: int, user: str, scratch: Path) -> None:
    code, seed = scratch / "code", scratch / "seed"
    shutil.copytree(ROOT / "shared", code / "shared")
    shutil.copytree(ROOT / "tests", code / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": f"{code / 'shared'}:{code}", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("MEMLAKE_KERNELS", None)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memlake", "warm-kernels", "--cache-dir", str(seed)],
                   env=env, check=True, capture_output=True)  # fmt: skip
    print(f"seed built (compiled) in {time.perf_counter() - t0:.1f} s", flush=True)
    as_user: list[str] = []
    if os.geteuid() == 0:
        pw = pwd.getpwnam(user)
        as_user = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups"]
        scratch.chmod(0o755)
        for path in (code, seed):  # readable, not writable, to the child's user
            subprocess.run(["chmod", "-R", "a+rX,go-w", str(path)], check=True)
    rows: dict[str, list[dict[str, float]]] = {}
    for i in range(runs):
        for mode in ("numpy", "auto", "numba", "import"):
            cache = scratch / f"cache-{mode}-{i}"
            cache.mkdir()
            if as_user:
                os.chown(cache, pw.pw_uid, pw.pw_gid)
            child_env = {**env, "MEMLAKE_KERNEL_CACHE_DIR": str(cache), "HOME": str(cache),
                         "MEMLAKE_KERNEL_CACHE_SEED": str(seed),
                         "MEMLAKE_KERNELS": "auto" if mode == "import" else mode}  # fmt: skip
            script = NUMBA if mode == "import" else CHILD
            t0 = time.perf_counter()
            cmd = [*as_user, sys.executable, "-c", script, str(root)]
            out = subprocess.run(cmd, env=child_env, capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(f"{mode}: the child failed:\n{out.stderr[-3000:]}")
            got = json.loads(out.stdout.strip().splitlines()[-1])
            got["process_s"] = time.perf_counter() - t0
            if i == 0:
                print(mode, got, flush=True)
            rows.setdefault(mode, []).append(got)
    for mode, got in rows.items():
        keys = [k for k, v in got[0].items() if isinstance(v, float)]
        medians = {k: round(statistics.median(r[k] for r in got) * 1000) for k in keys}
        print(f"{mode}: medians of {runs} new processes (ms): {medians}", flush=True)


if __name__ == "__main__":
    main()
