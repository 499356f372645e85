"""tools/list size per toolset: bytes of compact JSON as the server sends them.

    .venv/bin/python tests/bench/tools_list_size.py

"Model-facing" is what a model reads of each tool (name, description, inputSchema); "whole"
adds title, outputSchema and annotations. tests/unit/test_tool_surface.py keeps the ceilings.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))

from memlake.mcp.dispatch import descriptors  # noqa: E402


def size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def main() -> None:
    print("toolset | tools | model-facing B | whole B")
    for toolset in ("all", "episodes", "layers", "graph"):
        tools = descriptors((toolset,))
        facing = [{k: t[k] for k in ("name", "description", "inputSchema")} for t in tools]
        print(f"{toolset} | {len(tools)} | {size(facing):,} | {size({'tools': tools}):,}")


if __name__ == "__main__":
    main()
