"""The client's CPU a request: what S3Store (boto3) spends in Python on a ranged GET and a HEAD,
against a SigV4-signed and an unsigned urllib3 GET of the same ranges (decision 4401; the S3
model's `client_cpu`, s3_model_bench.py --client-cpu-ms).

    OMP_NUM_THREADS=1 .venv/bin/python tests/bench/s3_client_cpu_bench.py [--n 300]

moto's server runs in another process (`moto_server`), so this process's CPU time
(time.process_time) is the client's alone; the server is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "shared"))

BUCKET = "client-cpu-bench"


def _cpu_ms(call: Callable[[int], object], n: int) -> float:
    for i in range(20):  # connections made, code warm
        call(i)
    start = time.process_time()
    for i in range(n):
        call(i)
    return (time.process_time() - start) / n * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300)
    args = parser.parse_args()
    port = _free_port()
    server = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen(
        [str(server), "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait_for(port)
        os.environ.update(
            AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
        )
        import boto3
        import urllib3
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        from memlake.store.s3 import S3Store

        url = f"http://127.0.0.1:{port}"
        client = boto3.client("s3", endpoint_url=url)
        client.create_bucket(Bucket=BUCKET)
        store = S3Store(BUCKET, client=client, lean_reads=False)
        lean = S3Store(BUCKET, client=client)
        store.put("k", os.urandom(4 << 20))
        out = {}
        for size in (1 << 10, 64 << 10, 2 << 20):
            n = args.n if size < (1 << 20) else max(20, args.n // 8)
            for name, s in (("boto3", store), ("lean", lean)):  # alternating: one sitting
                out[f"S3Store.get_range {size >> 10} KiB, {name}"] = _cpu_ms(
                    lambda i, size=size, s=s: s.get_range("k", i, i + size), n
                )
        out["S3Store.exists (HEAD)"] = _cpu_ms(lambda i: store.exists("k"), args.n)
        creds = boto3.Session().get_credentials()
        http = urllib3.PoolManager(maxsize=4)
        key_url = f"{url}/{BUCKET}/k"

        def raw(i: int, sign: bool) -> bytes:
            headers = {"Range": f"bytes={i}-{i + 1023}"}
            if sign:
                req = AWSRequest(method="GET", url=key_url, headers=headers)
                SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
                headers = dict(req.headers)
            data: bytes = http.request("GET", key_url, headers=headers).data
            return data

        out["urllib3 GET 1 KiB, SigV4-signed"] = _cpu_ms(lambda i: raw(i, True), args.n)
        out["urllib3 GET 1 KiB, unsigned"] = _cpu_ms(lambda i: raw(i, False), args.n)
        for name, ms in out.items():
            print(f"{name}: {ms:.2f} ms of client CPU a request", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_for(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("moto_server did not start")


if __name__ == "__main__":
    main()
