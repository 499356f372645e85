"""Bytes of tool results an agent reads: add_episode, and search_episodes over five 48 KiB
episodes in each content mode, and over ten hits of typical sizes (1.2k and 3k characters) with
content full (docs/performance.md, "Result sizes").

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/result_size_bench.py
    # an older checkout, to compare (it knows no content modes: pass any argument)
    PYTHONPATH=<checkout>/shared .venv/bin/python tests/bench/result_size_bench.py old
"""

import json
import random
import sys
import tempfile
from pathlib import Path

import memlake
from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.mcp.dispatch import call_tool
from memlake.services import Services
from memlake.store.local import LocalStore

print("memlake from", memlake.__file__)

root = Path(tempfile.mkdtemp())
svc = Services.build(Settings(data_dir=root), LocalStore(root))
ctx = ToolContext(Principal("t"), svc)


def call(tool, args):
    r = call_tool({"name": tool, "arguments": args}, ctx).to_mcp()
    assert not r["isError"], r
    text = r["content"][0]["text"]
    wire = len(json.dumps(r, ensure_ascii=False).encode())
    return r["structuredContent"], len(text.encode()), wire


conv = (
    "user: Can we keep episodes as Parquet rows on S3? assistant: Yes; one segment per commit, "
    "compacted later. "
) * 20
out, text, wire = call("add_episode", {"content": conv[:2000], "context": "memlake"})
print(f"add_episode: text {text} B, wire {wire} B, fields {len(out)}")
rng = random.Random(11)


def filler(n):
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(n // 5))[:n]


for i in range(5):
    needle = f" The zebra ledger {i} was reconciled by Quentin on the night shift. "
    size = 48 * 1024
    half = (size - len(needle)) // 2
    call(
        "add_episode",
        {"content": filler(half) + needle + filler(size - half - len(needle)), "context": "zebra"},
    )
args = {"query": "zebra ledger reconciled Quentin", "context": "zebra"}
modes = [None] if len(sys.argv) > 1 else [None, "passage", "none"]
for mode in modes:
    a = dict(args, **({"content": mode} if mode else {}))
    out, text, wire = call("search_episodes", a)
    chars = sum(
        len(e.get("content") or "") + len((e.get("passage") or {}).get("text", ""))
        for e in out["episodes"]
    )
    name = mode or "default(full)"
    print(f"search_episodes content={name}: hits {out['count']}, text block {text} B,", end=" ")
    print(f"wire {wire} B, content/passage chars {chars}")

# typical episodes: ten hits, five of 1,200 and five of 3,000 characters (full mode)
for i in range(10):
    size = 1_200 if i % 2 else 3_000
    needle = f" The walrus budget {i} was approved by Ingrid after the review. "
    half = (size - len(needle)) // 2
    call(
        "add_episode",
        {"content": filler(half) + needle + filler(size - half - len(needle)), "context": "walrus"},
    )
out, text, wire = call("search_episodes", {"query": "walrus budget Ingrid", "context": "walrus"})
print(f"search_episodes typical (5 x 1.2k + 5 x 3k chars), full: hits {out['count']},", end=" ")
print(f"text block {text} B, wire {wire} B")
