"""Round-trip latency of `memlake serve` on loopback: the transport's own cost.

    OMP_NUM_THREADS=1 python tests/bench/http_bench.py [--ops 400]

Starts the server as a user does (tests/e2e/serverproc.py), stores a few episodes, then times
ping and tools/call get_episode / list_episodes, on one keep-alive connection and on a fresh
connection per request. A 40 ms median would mean Nagle plus delayed ACK (no TCP_NODELAY).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.e2e.serverproc import start_server  # noqa: E402

HEADERS = {"content-type": "application/json", "accept": "application/json"}


def rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}


def tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return rpc("tools/call", {"name": name, "arguments": args})


def timed(client_factory: Any, url: str, message: dict[str, Any], ops: int) -> list[float]:
    times = []
    client = client_factory()
    for _ in range(ops):
        started = time.perf_counter()
        resp = client.post(url, json=message, headers=HEADERS)
        times.append((time.perf_counter() - started) * 1000)
        assert resp.status_code == 200 and "result" in resp.json(), resp.text
        if client_factory is fresh:
            client.close()
            client = fresh()
    client.close()
    return times


def fresh() -> httpx.Client:
    return httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))


def report(label: str, times: list[float]) -> None:
    q = statistics.quantiles(times, n=20)
    print(f"{label:<34} p50 {statistics.median(times):6.2f} ms   p95 {q[18]:6.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, start_server(Path(tmp)) as server:
        url = server.mcp_url
        with httpx.Client() as http:
            for i in range(5):
                content = f"episode {i}: we agreed to ship the parquet lake on friday"
                r = http.post(url, json=tool("add_episode", {"content": content}), headers=HEADERS)
                episode = json.loads(r.json()["result"]["content"][0]["text"])["id"]
        cases = {
            "ping": rpc("ping"),
            "tools/call get_episode": tool("get_episode", {"id": episode}),
            "tools/call list_episodes": tool("list_episodes", {"limit": 5}),
        }
        for name, message in cases.items():
            timed(httpx.Client, url, message, 20)  # warm up
            report(f"{name} (keep-alive)", timed(httpx.Client, url, message, args.ops))
            report(f"{name} (new connection)", timed(fresh, url, message, args.ops // 2))


if __name__ == "__main__":
    main()
