"""A search Lambda's first call in a new process, two code trees side by side (decision 2513).

Each child is what a new SearchEpisodesFunction container runs: import the handler's module
(memlake.mcp.direct), then call search_episodes' sample event (functions/search_episodes/
event.json: a query text, embedded by MiniLM) on the S3 store, served by a moto server this
script starts, over one episode that add_episode's sample event wrote. Children alternate
between tree A and tree B (PYTHONPATH=<tree>/shared), so a noisy host loads both alike.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/cold_lambda_pair.py \\
        --a /tmp/A --b . [--runs 7]

(A: `git worktree add /tmp/A <commit>`.) Prints each child and the medians of import, first
call and their sum in ms.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
from pathlib import Path

from moto.server import ThreadedMotoServer

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "memlake-cold-pair"

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from memlake.mcp.direct import invoke_tool
t1 = time.perf_counter()
event = json.loads(open(sys.argv[1]).read())
got = invoke_tool(sys.argv[2], event)
t2 = time.perf_counter()
assert not got.get("isError"), got
print(json.dumps({"import_ms": 1e3 * (t1 - t0), "call_ms": 1e3 * (t2 - t1),
                  "found": len(got.get("episodes", [])) if "episodes" in got else got.get("id")}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _child(tree: Path, env: dict[str, str], tool: str) -> dict[str, float]:
    event = ROOT / "functions" / tool / "event.json"
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(event), tool],
        env={**env, "PYTHONPATH": str(tree.resolve() / "shared")},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", type=Path, required=True)
    ap.add_argument("--b", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "MEMLAKE_STORE": "s3",
            "MEMLAKE_BUCKET": BUCKET,
            "AWS_ENDPOINT_URL_S3": endpoint,
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "MEMLAKE_CURSOR_KEY": "cold-lambda-pair-cursor-key-0123456789",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
        }
        import boto3

        s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
        s3.create_bucket(Bucket=BUCKET)
        print("add_episode:", _child(args.b, env, "add_episode")["found"])
        got: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
        for _ in range(args.runs):
            for name, tree in (("A", args.a), ("B", args.b)):
                one = _child(tree, env, "search_episodes")
                assert one["found"], one
                got[name].append(one)
                print(name, {k: round(v) for k, v in one.items() if k != "found"}, flush=True)
        for name, runs in got.items():
            imp = statistics.median(r["import_ms"] for r in runs)
            call = statistics.median(r["call_ms"] for r in runs)
            both = statistics.median(r["import_ms"] + r["call_ms"] for r in runs)
            print(f"{name}: import {imp:.0f} ms, first call {call:.0f} ms, both {both:.0f} ms")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
