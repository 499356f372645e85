"""The MCP Inspector CLI (@modelcontextprotocol/inspector, `--cli`) against `memlake serve`.

Invocation (one process per request):

    node <inspector>/clients/launcher/build/index.js --cli http://127.0.0.1:PORT/mcp \
        --transport http --protocol-era legacy|auto|modern --format json \
        --method tools/list
        --method tools/call --tool-name NAME --tool-args-json '{"k": "v"}'

`--format json` prints one object `{"result": <MCP result>}` on stdout; failures print
`{"error": {"code": "...", "message": "..."}}` on stderr with a non-zero exit (5: tool
returned isError / unknown tool, 4: server unreachable). `--protocol-era legacy` (the default for
ad-hoc URLs) does initialize + notifications/initialized (+ a GET that may be 405);
`auto` probes `server/discover` at 2026-07-28 and falls back to initialize. In auto/modern mode
`tools/call` is preceded by a `tools/list` and followed by a `subscriptions/listen` (a 404 for
it is tolerated). The Inspector keeps state under ~/.mcp-inspector, so HOME points at a tmp dir.

Install the tools with tests/e2e/node/install_node_tools.sh.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .serverproc import MCP_PATH, NODE_TOOLS_MARKS, require_node_tools

pytestmark = NODE_TOOLS_MARKS

EXPECTED_TOOLS = {"add_episode", "get_episode", "delete_episode", "list_episodes"}
CONTENT = "hello from inspector"
TIMEOUT = 60


class Inspector:
    def __init__(self, url: str, era: str, home: Path) -> None:
        self.tools = require_node_tools()
        self.url = url
        self.era = era
        self.env = {**os.environ, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "catalog.json")}

    def run(self, *args: str) -> dict[str, Any]:
        cmd = [
            str(self.tools.node),
            str(self.tools.inspector),
            "--cli",
            self.url,
            "--transport",
            "http",
            "--protocol-era",
            self.era,
            "--format",
            "json",
            *args,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=self.env)
        report = (
            f"inspector {' '.join(args)} (era {self.era}) exit={proc.returncode}\n"
            f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
        )
        assert proc.returncode == 0, report
        try:
            out = json.loads(proc.stdout)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"stdout is not JSON ({exc})\n{report}") from None
        assert isinstance(out, dict) and "result" in out, report
        return out["result"]  # type: ignore[no-any-return]

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.run(
            "--method", "tools/call", "--tool-name", tool, "--tool-args-json", json.dumps(arguments)
        )
        assert not result.get("isError"), result
        assert isinstance(result.get("structuredContent"), dict), result
        return result


def _contains(value: Any, needle: str) -> bool:
    if isinstance(value, str):
        return value == needle
    if isinstance(value, dict):
        return any(_contains(v, needle) for v in value.values())
    if isinstance(value, list):
        return any(_contains(v, needle) for v in value)
    return False


@pytest.mark.parametrize("era", ["legacy", "auto"])
def test_inspector_lists_tools_and_round_trips_an_episode(
    running_server: str,  # noqa: F811
    era: str,
    tmp_path: Path,
) -> None:
    inspector = Inspector(running_server + MCP_PATH, era, tmp_path)

    listed = inspector.run("--method", "tools/list")
    names = {tool["name"] for tool in listed["tools"]}
    assert names >= EXPECTED_TOOLS, (
        f"missing tools: {sorted(EXPECTED_TOOLS - names)} (got {sorted(names)})"
    )

    added = inspector.call("add_episode", {"content": CONTENT})
    episode_id = added["structuredContent"].get("id")
    assert isinstance(episode_id, str) and episode_id, added

    got = inspector.call("get_episode", {"id": episode_id})
    assert _contains(got["structuredContent"], CONTENT), got
    assert _contains(got["structuredContent"], episode_id), got
