"""Round-trip latency of `memlake serve` on loopback: the transport's own cost, and search.

    OMP_NUM_THREADS=1 python tests/bench/http_bench.py [--ops 400] [--sessions 300]

Starts the server as a user does (tests/e2e/serverproc.py), stores a few episodes, then times
ping and tools/call get_episode / list_episodes, on one keep-alive connection and on a fresh
connection per request. A 40 ms median would mean Nagle plus delayed ACK (no TCP_NODELAY).

With --sessions N it then stores the first N sessions of the chat corpus
(tests/bench/conversations.py, one context per conversation) through add_episode, and times
search_episodes for the corpus's questions as an agent asks them over HTTP (keep-alive): ten
passages, and the evidence of the top 20 hits within 8,000 characters, alternating per query.
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


def search_cases(http: httpx.Client, url: str, sessions: int, ops: int) -> None:
    from tests.bench.conversations import corpus

    convs = corpus(conversations=max(1, sessions // 18 + 1), seed=11)
    stored, questions = 0, []
    started = time.perf_counter()
    for conv in convs:
        for text, when in zip(conv.sessions, conv.dates, strict=True):
            if stored == sessions:
                break
            args = {"content": text, "context": conv.name, "started_at": when.isoformat()}
            r = http.post(url, json=tool("add_episode", args), headers=HEADERS, timeout=120)
            assert not r.json()["result"].get("isError"), r.text
            stored += 1
        questions += [q.text for q in conv.questions]
    took = time.perf_counter() - started
    print(f"stored {stored} chat sessions in {took:.0f} s; {len(questions)} questions")
    asks = {
        "search_episodes passage limit 10": {"content": "passage", "limit": 10},
        "search_episodes evidence 8,000": {"content": "evidence", "budget": 8_000},
    }
    times: dict[str, list[float]] = {name: [] for name in asks}
    for i in range(ops + 20):
        for name, ask in asks.items():
            message = tool("search_episodes", {"query": questions[i % len(questions)], **ask})
            t0 = time.perf_counter()
            r = http.post(url, json=message, headers=HEADERS, timeout=60)
            if i >= 20:  # the first 20 warm the caches
                times[name].append((time.perf_counter() - t0) * 1000)
            assert not r.json()["result"].get("isError"), r.text
    for name, t in times.items():
        report(f"{name} (keep-alive)", t)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=400)
    parser.add_argument("--sessions", type=int, default=0, help="chat sessions to search over")
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
        if args.sessions:
            with httpx.Client() as http:
                search_cases(http, url, args.sessions, args.ops)


if __name__ == "__main__":
    main()
