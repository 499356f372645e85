"""What a user sees through /mcp: a fresh `memlake serve` per round on a copy of a built tenant,
its store on local disk or on the S3 model (MEMLAKE_STORE_LATENCY), the mcp package's
streamable HTTP client calling search_episodes (the process's first search: cold, the query
embedded by MiniLM), the next one at once, then warm searches of new queries and add_episode
once the server's background work settled (decision 4401).

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
SETTLE = 8.0  # seconds for the background promotion and id index after the first search
WARM = 5


async def _timed(client: Any, tool: str, args: dict[str, Any]) -> float:
    t0 = time.perf_counter()
    got = await call(client, tool, args)
    assert not got["is_error"], got
    return (time.perf_counter() - t0) * 1000


async def _session(url: str, texts: list[str], i: int) -> dict[str, float]:
    """The first search (cold), the next one at once (while the server promotes shards and
    builds the id index in the background), then, SETTLE seconds on, WARM new queries and
    WARM add_episode calls: their medians."""
    out: dict[str, float] = {}
    async with connect(url + "/mcp", TOKEN) as client:
        out["cold_search_ms"] = await _timed(client, "search_episodes", {"query": texts[i]})
        out["next_search_ms"] = await _timed(client, "search_episodes", {"query": texts[i + 50]})
        await asyncio.sleep(SETTLE)
        warm = [
            await _timed(client, "search_episodes", {"query": texts[100 + 10 * i + j]})
            for j in range(WARM)
        ]
        out["warm_search_ms"] = statistics.median(warm)
        adds = [
            await _timed(client, "add_episode", {"content": f"{i}.{j}: {texts[j]}, then more"})
            for j in range(WARM)
        ]
        out["add_episode_ms"] = statistics.median(adds)
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
