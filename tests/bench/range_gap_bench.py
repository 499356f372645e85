"""How far apart two byte ranges may be before RangedNpz reads over the gap (COALESCE_GAP).

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/bench/range_gap_bench.py \
        [--rows 65536] [--lists 256] [--probe 16] [--trials 7]

One .npz member of SQ8-like codes (rows x 384 uint8, 25 MB at the defaults) split in `--lists`
equal lists, the shape an IVF list layout gives; each trial reads `--probe` random lists with
RangedNpz.many (headers known), on the local store and on moto's S3 server, for several gap
thresholds. Reports p50 time, GETs and bytes read (medians over the trials) against the bytes
wanted. Moto copies the whole object per GET, so its per-request cost is far above S3's: read
its times as "requests are expensive", not as S3 latency.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.search.index.ranges import RangedNpz, Slice  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from memlake.store.s3 import S3Store  # noqa: E402
from tests.support.counting import CountingStore  # noqa: E402

GAPS = (0, 64 << 10, 256 << 10, 1 << 20, 4 << 20)


def run(store: CountingStore, label: str, data: bytes, args: argparse.Namespace) -> None:
    store.inner.put("o.npz", data)  # type: ignore[attr-defined]
    per = args.rows // args.lists
    wanted = args.probe * per * 384
    for gap in GAPS:
        times, gets, read = [], [], []
        for trial in range(args.trials):
            rng = np.random.default_rng(trial)
            lists = sorted(rng.choice(args.lists, args.probe, replace=False))
            reader = RangedNpz(store, "o.npz", len(data), gap=gap)
            reader.info("codes")
            store.reset()
            t = time.perf_counter()
            reader.many([Slice("codes", int(i) * per, (int(i) + 1) * per) for i in lists])
            times.append(time.perf_counter() - t)
            gets.append(store.counts["get_range"])
            read.append(store.bytes_read)
        print(
            f"| {label} | {gap >> 10} KiB | {statistics.median(times) * 1000:.1f} ms"
            f" | {statistics.median(gets):.0f} | {statistics.median(read) / 1e6:.2f} MB"
            f" | {statistics.median(read) / wanted:.2f} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=65536)
    ap.add_argument("--lists", type=int, default=256)
    ap.add_argument("--probe", type=int, default=16)
    ap.add_argument("--trials", type=int, default=7)
    args = ap.parse_args()
    sink = io.BytesIO()
    np.savez(sink, codes=np.zeros((args.rows, 384), np.uint8))
    data = sink.getvalue()
    print("| store | gap | p50 | GETs | read | read / wanted |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    run(CountingStore(LocalStore(tempfile.mkdtemp())), "local", data, args)

    import boto3
    from moto.server import ThreadedMotoServer

    from tests.e2e.mcp_helpers import free_port

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        client = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
        client.create_bucket(Bucket="gap-bench")
        run(CountingStore(S3Store("gap-bench", client=client)), "moto S3", data, args)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
