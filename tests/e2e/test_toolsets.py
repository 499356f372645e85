"""Toolsets through /mcp with the official client: `memlake serve` started with
MEMLAKE_TOOLSETS lists exactly the chosen tools (both protocol eras), refuses the others as
unknown tools, and its instructions teach the workflow of the tools that are on; an unknown
toolset stops the server at startup with one clear line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from memlake.tools.registry import TOOL_NAMES, enabled_names

from .mcp_helpers import call, connect, run, serve_subprocess

CASES = [("episodes",), ("layers",), ("graph",), ("episodes", "graph"), ("all",)]
#: one tool of each set, with arguments that succeed on an empty lake
PROBES = {
    "list_episodes": {},
    "get_pending_threads": {},
    "get_audit_log": {},
}


@pytest.mark.slow
@pytest.mark.parametrize("toolsets", CASES, ids=",".join)
def test_a_server_offers_exactly_its_toolsets(toolsets: tuple[str, ...], tmp_path: Path) -> None:
    offered = enabled_names(toolsets)

    async def scenario(url: str, mode: str) -> None:
        async with connect(url, mode=mode) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            assert listed == list(offered)
            assert client.instructions and "memlake" in client.instructions
            for name in TOOL_NAMES:
                if name in PROBES and name in offered:
                    out = await call(client, name, PROBES[name])
                    assert not out.get("is_error"), out
                elif name not in offered:
                    with pytest.raises(MCPError) as info:
                        await client.call_tool(name, {})
                    assert info.value.error.code == -32602
                    assert info.value.error.message == (
                        f"Unknown tool: {name}. Call tools/list for the tools."
                    )
            if "episodes" in toolsets or "all" in toolsets:
                assert "add_episode" in client.instructions
            else:
                assert "add_episode " not in client.instructions
            if "graph" not in toolsets and "all" not in toolsets:
                assert "add_episode_relationship" not in client.instructions

    with serve_subprocess(tmp_path, {"MEMLAKE_TOOLSETS": ",".join(toolsets)}) as url:
        for mode in ("auto", "legacy"):  # server/discover (2026-07-28), and initialize
            run(scenario(url, mode))


def test_an_unknown_toolset_stops_the_server_with_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "MEMLAKE_TOOLSETS": "episodes,memories", "OMP_NUM_THREADS": "1"}
    env.pop("MEMLAKE_API_KEYS", None)
    cmd = [sys.executable, "-m", "memlake", "serve", "--port", "0", "--data", str(tmp_path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "memlake: MEMLAKE_TOOLSETS: unknown toolset 'memories'; choose from episodes, layers,"
        " graph, all (comma-separated, e.g. episodes,layers)"
    )
    assert "Traceback" not in proc.stderr
