"""Cold start of the MCP Lambda handler: a fresh interpreter imports functions/mcp/app.py and
answers its first initialize, then tools/list; repeated in new processes, medians printed.

    OMP_NUM_THREADS=1 python tests/bench/cold_start_bench.py [--runs 7] [--tracing]

The child runs with the environment template.yaml gives the function (MEMLAKE_STORE=s3 and a
bucket name: the S3 client is built, no request is sent; initialize and tools/list never touch
the lake) plus AWS_LAMBDA_FUNCTION_NAME, as Lambda sets it. --tracing also sets what active
X-Ray tracing sets (the daemon address on loopback and a trace header), so the Powertools
Tracer and the X-Ray SDK load as they would in AWS. "process" is the wall time of the whole
child, interpreter start included; "import" and "initialize" are measured inside it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("mcp", "faiss", "tokenizers", "torch", "safetensors", "bm25s", "aws_xray_sdk")

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, ROOT)
from functions.mcp.app import lambda_handler
t1 = time.perf_counter()

class Ctx:
    function_name = "McpFunction"; function_version = "$LATEST"; memory_limit_in_mb = 1024
    aws_request_id = "bench"; log_group_name = "g"; log_stream_name = "s"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:McpFunction"
    def get_remaining_time_in_millis(self): return 30000

def event(method, params, rid):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    ctx = {"http": {"method": "POST", "path": "/mcp"}, "requestId": rid, "stage": "$default",
           "authorizer": {"jwt": {"claims": {"sub": "bench"}}}}
    return {"version": "2.0", "rawPath": "/mcp", "body": body, "isBase64Encoded": False,
            "headers": {"content-type": "application/json", "accept": "application/json"},
            "requestContext": ctx}

init = lambda_handler(event("initialize", {"protocolVersion": "2025-11-25"}, "r1"), Ctx())
t2 = time.perf_counter()
after_init = sorted(m for m in HEAVY if m in sys.modules)
tools = lambda_handler(event("tools/list", {}, "r2"), Ctx())
t3 = time.perf_counter()
assert init["statusCode"] == 200 and tools["statusCode"] == 200, (init, tools)
print("BENCH " + json.dumps({
    "import_s": t1 - t0, "initialize_s": t2 - t1, "tools_list_s": t3 - t2,
    "heavy_after_initialize": after_init,
    "heavy_after_tools_list": sorted(m for m in HEAVY if m in sys.modules),
    "tools": len(json.loads(tools["body"])["result"]["tools"]),
}))
"""


def child_env(tracing: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLAKE_", "AWS_XRAY"))}
    env.update(
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MEMLAKE_STORE="s3",
        MEMLAKE_BUCKET="memlake-bench",
        MEMLAKE_TENANT_CLAIM="sub",
        MEMLAKE_EMBEDDER="minilm",
        POWERTOOLS_METRICS_NAMESPACE="memlake",
        AWS_LAMBDA_FUNCTION_NAME="McpFunction",
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        PYTHONPATH=str(ROOT / "shared"),
    )
    env.pop("POWERTOOLS_TRACE_DISABLED", None)
    if tracing:
        env["AWS_XRAY_DAEMON_ADDRESS"] = "127.0.0.1:2000"
        env["_X_AMZN_TRACE_ID"] = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0"
    return env


def run_once(tracing: bool = False) -> dict[str, Any]:
    code = f"ROOT = {str(ROOT)!r}\nHEAVY = {HEAVY!r}\n" + CHILD
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=child_env(tracing),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("BENCH "))
    return {**json.loads(line[len("BENCH ") :]), "process_s": elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tracing", action="store_true")
    args = parser.parse_args()
    run_once(args.tracing)  # warm the OS file cache: Lambda's image is local disk too
    runs = [run_once(args.tracing) for _ in range(args.runs)]
    med = {
        k: statistics.median(r[k] for r in runs)
        for k in ("import_s", "initialize_s", "tools_list_s", "process_s")
    }
    cold = med["import_s"] + med["initialize_s"]
    print(f"runs={args.runs} tracing={args.tracing} tools={runs[0]['tools']}")
    print(
        f"median import {med['import_s'] * 1000:.0f} ms, first initialize"
        f" {med['initialize_s'] * 1000:.0f} ms, import+initialize {cold * 1000:.0f} ms,"
        f" then tools/list {med['tools_list_s'] * 1000:.0f} ms;"
        f" whole process (interpreter start to tools/list) {med['process_s'] * 1000:.0f} ms"
    )
    print(f"heavy modules after initialize: {runs[0]['heavy_after_initialize'] or 'none'}")
    print(f"heavy modules after tools/list: {runs[0]['heavy_after_tools_list'] or 'none'}")


if __name__ == "__main__":
    main()
