"""The official MCP conformance suite (@modelcontextprotocol/conformance) against `memlake serve`.

Each server scenario connects with the TypeScript SDK client (legacy `initialize` handshake at
2025-11-25; it also opens a GET stream after `notifications/initialized` and accepts 405) or
with raw HTTP, and reports checks with status SUCCESS / FAILURE / WARNING. The CLI exits 1 when
any check FAILs (warnings don't change the exit code for a single scenario), and `-o DIR`
writes the checks to `DIR/server-<scenario>-<timestamp>/checks.json`.

Install the tools with tests/e2e/node/install_node_tools.sh.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from .serverproc import MCP_PATH, NODE_TOOLS_MARKS, require_node_tools

pytestmark = NODE_TOOLS_MARKS

SCENARIOS = {
    # initialize -> InitializeResult with serverInfo/protocolVersion/capabilities, then the
    # `notifications/initialized` POST; FAILURE if the TS client's connect() throws.
    "server-initialize": "initialize handshake",
    # connect, then `ping`; the result must be exactly {}.
    "ping": "ping answers {}",
    # connect, then `tools/list`; every tool needs name, description and inputSchema.
    "tools-list": "tools/list structure",
    # raw POST initialize with Host+Origin `evil.example.com` -> must be 4xx; with the real
    # localhost Host+Origin (`127.0.0.1:<port>`, `http://127.0.0.1:<port>`) -> must be 2xx.
    "dns-rebinding-protection": "Host/Origin validation",
}
TIMEOUT = 120
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_scenario(
    url: str, scenario: str, out_dir: Path
) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    tools = require_node_tools()
    cmd = [
        str(tools.node),
        str(tools.conformance),
        "server",
        "--url",
        url,
        "--scenario",
        scenario,
        "-o",
        str(out_dir),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, cwd=out_dir)
    checks: list[dict] = []
    for path in sorted(out_dir.glob(f"server-{scenario}-*/checks.json")):
        checks.extend(json.loads(path.read_text()))
    return proc, checks


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_conformance_scenario(running_server: str, scenario: str, tmp_path: Path) -> None:  # noqa: F811
    proc, checks = run_scenario(running_server + MCP_PATH, scenario, tmp_path)
    report = (
        f"conformance scenario {scenario!r} ({SCENARIOS[scenario]}) exit={proc.returncode}\n"
        f"--- stdout ---\n{ANSI.sub('', proc.stdout)}\n"
        f"--- stderr ---\n{ANSI.sub('', proc.stderr)}\n"
        f"--- checks.json ---\n{json.dumps(checks, indent=2)}"
    )
    failed = [c for c in checks if c.get("status") == "FAILURE"]
    warned = [c for c in checks if c.get("status") == "WARNING"]
    if warned:
        print(f"{scenario}: warnings: {json.dumps(warned, indent=2)}")
    assert checks, "no checks were recorded\n" + report
    assert not failed, report
    assert proc.returncode == 0, report
