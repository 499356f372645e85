"""Talking to a running memlake through /mcp with the official `mcp` client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            raise RuntimeError(f"server exited early ({proc.returncode}):\n{out}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {port} after {timeout}s")


@contextlib.contextmanager
def serve_subprocess(data_dir: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """`memlake serve` in its own process, as a user starts it."""
    port = free_port()
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", **(env or {})}
    cmd = [sys.executable, "-m", "memlake", "serve", "--port", str(port), "--data", str(data_dir)]
    proc = subprocess.Popen(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextlib.contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """The same transport on a thread of this process (for moto's in-process mock_aws)."""
    from memlake.server import _Handler

    handler = type("Handler", (_Handler,), {"app": app})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}/mcp"
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextlib.asynccontextmanager
async def connect(url: str, token: str | None = None, mode: str = "auto") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
            yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call a tool: structuredContent (checked against the text block), or on a tool error the
    {"error": {code, message, hint}} the text block carries."""
    result = await client.call_tool(tool, args)
    text = json.loads(result.content[0].text)  # type: ignore[union-attr]
    if result.is_error:
        assert result.structured_content is None and set(text) == {"error"}, result
        return {"is_error": True, **text}
    assert result.structured_content == text
    return {"is_error": False, **result.structured_content}


def run(coro: Any) -> Any:
    return asyncio.run(coro)
