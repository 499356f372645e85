"""What a user sees through /mcp: a fresh `memlake serve` per round on a copy of a built tenant,
its store on local disk or on the S3 model (MEMLAKE_STORE_LATENCY), the mcp package's
streamable HTTP client calling search_episodes (the process's first search: cold, the query
embedded by MiniLM), a second search of a new query (warm), and add_episode (decision 4401).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/s3_mcp_bench.py \
        /tmp/t10k [--rounds 5] [--latency 25ms,90MB/s]

The tenant is first_share_bench's (s3_model_bench.py's docstring builds one). Rounds alternate
local and modelled; each starts its server on its own copy (the server's maintenance may write).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.e2e.mcp_helpers import call, connect  # noqa: E402
from tests.e2e.serverproc import start_server  # noqa: E402

TOKEN = "bench-token"


async def _session(url: str, texts: list[str], i: int) -> dict[str, float]:
    out: dict[str, float] = {}
    async with connect(url + "/mcp", TOKEN) as client:
        for name, args in (
            ("cold_search_ms", {"query": texts[i], "limit": 10}),
            ("warm_search_ms", {"query": texts[i + 100], "limit": 10}),
            (
                "add_episode_ms",
                {"content": f"round {i}: {texts[i]} and then some", "context": "c1"},
            ),
        ):
            tool = "add_episode" if name.startswith("add") else "search_episodes"
            t0 = time.perf_counter()
            got = await call(client, tool, args)
            out[name] = (time.perf_counter() - t0) * 1000
            assert not got["is_error"], got
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency", default="25ms,90MB/s")
    args = parser.parse_args()
    texts = json.loads((args.root / "texts.json").read_text())
    rows: dict[str, list[dict[str, float]]] = {"local": [], "s3": []}
    for i in range(args.rounds):
        for kind in ("local", "s3") if i % 2 == 0 else ("s3", "local"):
            with tempfile.TemporaryDirectory() as tmp:
                data = Path(tmp) / "lake"
                shutil.copytree(args.root / "tenants", data / "tenants")
                env = {"MEMLAKE_API_KEYS": f"{TOKEN}:bench"}
                if kind == "s3":
                    env["MEMLAKE_STORE_LATENCY"] = args.latency
                with start_server(data, env) as server:
                    rows[kind].append(asyncio.run(_session(server.base_url, texts, i)))
            print(kind, {k: round(v) for k, v in rows[kind][-1].items()}, flush=True)
    out: dict[str, Any] = {"latency": args.latency, "rounds": args.rounds}
    for kind, got in rows.items():
        out[kind] = {k: round(statistics.median(r[k] for r in got), 1) for k in got[0]}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
