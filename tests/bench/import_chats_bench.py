"""`memlake import-chats` on a generated ChatGPT export (issue 46, decision 4601).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/import_chats_bench.py \\
        [--conversations 10000] [--turns 20] [--words 80] [--keep DIR]

Writes a conversations.json of `--conversations` linear conversations (`--turns` messages of
~`--words` words each, ~10 KB a conversation at the defaults: 10,000 make ~100 MB), written a
conversation at a time so the generator holds none of it, then runs the command as a separate
process on a fresh local lake and reports wall time, the process's peak resident memory
(wait4's rusage of that child), conversations per second and the summary; then runs it again
on the same export (nothing to do: the cost of the idempotency check). Targets (issue 46):
under 10 minutes and under 500 MB resident for 10,000 conversations, without vectors; the
issue's 500 MB export is `--conversations 30000` (492 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
WORDS = [
    "lake",
    "parquet",
    "manifest",
    "commit",
    "shard",
    "index",
    "query",
    "vector",
    "passage",
    "thread",
    "episode",
    "concept",
    "agent",
    "memory",
    "search",
    "import",
    "export",
    "batch",
    "stream",
    "tenant",
    "bucket",
    "object",
    "segment",
    "schema",
    "time",
    "zone",
    "kettle",
    "fern",
    "hike",
    "tram",
    "sourdough",
    "capybara",
    "anemone",
    "ridge",
    "trail",
    "garden",
    "recipe",
    "invoice",
    "budget",
]


def _conversation(i: int, turns: int, words: int, rng: random.Random) -> dict[str, Any]:
    mapping, prev = {}, None
    ids = [f"c{i}-{t}" for t in range(turns)]
    for t, node_id in enumerate(ids):
        text = " ".join(rng.choice(WORDS) for _ in range(words)) + f" marker{i}x{t}"
        mapping[node_id] = {
            "id": node_id,
            "parent": prev,
            "children": [ids[t + 1]] if t + 1 < turns else [],
            "message": {
                "id": node_id,
                "author": {"role": "user" if t % 2 == 0 else "assistant"},
                "create_time": 1_700_000_000.0 + i * 100 + t,
                "content": {"content_type": "text", "parts": [text]},
                "metadata": {"model_slug": "gpt-4o"} if t % 2 else {},
            },
        }
        prev = node_id
    return {
        "id": f"conv-{i:06d}",
        "title": f"Generated conversation {i}",
        "create_time": 1_700_000_000.0 + i * 100,
        "update_time": 1_700_000_000.0 + i * 100 + turns,
        "current_node": ids[-1],
        "mapping": mapping,
    }


def write_export(path: Path, conversations: int, turns: int, words: int) -> int:
    rng = random.Random(46)
    with path.open("w") as f:
        f.write("[")
        for i in range(conversations):
            f.write(("," if i else "") + json.dumps(_conversation(i, turns, words, rng)))
        f.write("]")
    return path.stat().st_size


def run_import(export: Path, lake: Path) -> dict[str, Any]:
    """One `memlake import-chats` process: wall time, its own peak resident memory (wait4's
    rusage of that child alone) and its JSON summary."""
    env = {**os.environ, "MEMLAKE_STORE": "local", "OMP_NUM_THREADS": "1"}
    env.pop("MEMLAKE_BUCKET", None)
    argv = [sys.executable, "-m", "memlake", "import-chats", str(export), "--data", str(lake)]
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [*argv, "--json"], stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=ROOT
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        out.seek(0)
        text = out.read().decode()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"import failed ({proc.returncode}): {text[-2000:]}")
    report = json.loads(text.strip().splitlines()[-1])
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024), **report}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--words", type=int, default=80)
    parser.add_argument("--keep", help="write the export and the lake here (else a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(args.keep or tmp)
        base.mkdir(parents=True, exist_ok=True)
        export = base / "conversations.json"
        t0 = time.monotonic()
        size = write_export(export, args.conversations, args.turns, args.words)
        print(
            f"export: {args.conversations:,} conversations, {size / 1e6:.1f} MB"
            f" (written in {time.monotonic() - t0:.1f} s)",
            flush=True,
        )
        first = run_import(export, base / "lake")
        rate = first["conversations"] / max(first["seconds"], 1e-9)
        print(
            json.dumps({"run": "first", **first, "conversations_per_s": round(rate, 1)}), flush=True
        )
        again = run_import(export, base / "lake")
        print(json.dumps({"run": "again", **again}), flush=True)


if __name__ == "__main__":
    main()
