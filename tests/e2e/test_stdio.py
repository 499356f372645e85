"""`memlake stdio` as desktop clients run it: a subprocess spoken to over its pipes.

With the official mcp client's stdio transport (the handshake through ClientSession, and
Client's default auto mode, which speaks 2026-07-28), on the local lake and on S3 (moto's
server as the endpoint); then over raw pipes: only JSON lines on stdout, logs on stderr,
malformed and over-long lines, EOF and signals.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import boto3
import pytest
from mcp import ClientSession
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from moto.server import ThreadedMotoServer

from .mcp_helpers import call, free_port, run

ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MEMLAKE_LOG_LEVEL": "INFO"}
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}},
}


def params(
    data: Path | None, env: dict[str, str] | None = None, cwd: Path | None = None
) -> StdioServerParameters:
    """What a desktop client's config says: the command, its args, its environment."""
    args = ["-m", "memlake", "stdio"] + (["--data", str(data)] if data else [])
    env = {**ENV, **(env or {})}
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=cwd)


async def _all_tools(session: ClientSession) -> list[str]:
    names: list[str] = []
    cursor = None
    while True:
        page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return names


def _round_trip(server: StdioServerParameters, second: StdioServerParameters) -> None:
    async def scenario() -> None:
        async with (
            stdio_client(server) as (read, write),
            ClientSession(read, write) as session,
            stdio_client(second) as (read2, write2),  # another app on the same lake, at once
            ClientSession(read2, write2) as other,
        ):
            init = await session.initialize()
            assert init.server_info.name == "memlake" and init.instructions
            await other.initialize()
            tools = await _all_tools(session)
            assert {"add_episode", "search_episodes", "get_episode"} <= set(tools)
            added = await call(session, "add_episode", {"content": "The heron nests by the mill"})
            assert not added["is_error"], added
            found = await call(session, "search_episodes", {"query": "heron mill"})
            assert [e["id"] for e in found["episodes"]] == [added["id"]]
            bad = await call(session, "get_episode", {"id": "no-such-episode"})
            assert bad["is_error"] and bad["error"]["message"], bad

            # the second process, started before the write, sees it; and the first sees its own
            seen = await call(other, "search_episodes", {"query": "heron"})
            assert [e["content"] for e in seen["episodes"]] == ["The heron nests by the mill"]
            more = await call(other, "add_episode", {"content": "A heron again, by the weir"})
            assert not more["is_error"], more
            both = await call(session, "search_episodes", {"query": "heron"})
            assert {e["id"] for e in both["episodes"]} == {added["id"], more["id"]}

    run(scenario())


def test_mcp_client_session_over_stdio_on_the_local_lake(tmp_path: Path) -> None:
    _round_trip(params(tmp_path / "lake"), params(tmp_path / "lake"))


def test_mcp_client_over_stdio_toolset_compact_results_and_content_modes(tmp_path: Path) -> None:
    from memlake.tools.registry import TOOLSETS

    from .test_compact_results import wasted

    server = params(tmp_path / "lake")
    server.args += ["--toolsets", "episodes"]

    async def scenario() -> None:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.instructions and "add_episode" in init.instructions
            assert "relationship" not in init.instructions  # only the tools that are on
            assert set(await _all_tools(session)) == set(TOOLSETS["episodes"])
            content = "Filler about the weather. " * 40 + "The otter swims under the bridge."
            added = await call(session, "add_episode", {"content": content, "context": "river"})
            assert not added["is_error"] and wasted(added) == [], added
            for mode in ("passage", "none"):
                got = await call(
                    session, "search_episodes", {"query": "otter bridge", "content": mode}
                )
                assert not got["is_error"] and wasted(got) == [], got
                hit = got["episodes"][0]
                assert hit["id"] == added["id"] and "content" not in hit
                if mode == "passage":
                    span = hit["passage"]
                    assert content[span["start"] : span["end"]] == span["text"]
                    assert "otter" in span["text"]
                else:  # offsets only: the text is not asked for
                    span = hit["passage"]
                    assert set(span) == {"start", "end"}
                    assert "otter" in content[span["start"] : span["end"]]
            with pytest.raises(MCPError) as refused:  # a graph tool is not offered here
                await session.call_tool("add_episode_relationship", {})
            assert refused.value.error.code == -32602

    run(scenario())


@pytest.fixture(scope="module")
def moto_s3() -> Iterator[dict[str, str]]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        client = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
        client.create_bucket(Bucket="memlake-stdio")
        yield {
            "MEMLAKE_BUCKET": "memlake-stdio",
            "AWS_ENDPOINT_URL_S3": endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
    finally:
        server.stop()


def test_mcp_client_session_over_stdio_on_s3(moto_s3: dict[str, str], tmp_path: Path) -> None:
    """No --data: the MEMLAKE_* settings choose the lake, here an S3 bucket."""
    _round_trip(params(None, moto_s3, tmp_path), params(None, moto_s3, tmp_path))
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=moto_s3["AWS_ENDPOINT_URL_S3"])
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="memlake-stdio").get("Contents", [])]
    assert any(k.startswith("tenants/default/") for k in keys), keys
    assert list(tmp_path.iterdir()) == []  # nothing went to a local ./memlake-data


def test_mcp_client_auto_mode_speaks_2026_over_stdio(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Client(params(tmp_path), mode="auto") as client:
            assert client.session.discover_result is not None  # the envelope era, no handshake
            assert "add_episode" in {t.name for t in (await client.list_tools()).tools}
            added = await call(client, "add_episode", {"content": "modern stdio"})
            assert not added["is_error"], added
            bad = await call(client, "add_episode", {"content": ""})
            assert bad["is_error"] and "content" in bad["error"]["message"]

    run(scenario())


def test_stdio_runs_the_background_maintenance(tmp_path: Path) -> None:
    """Deferred embedding, as under `memlake serve`: a long episode's pending passages are
    embedded by the maintenance thread (it ticks every 2 s) while the connection is idle."""
    long_text = " ".join(
        f"Entry {i}: the heron waited by the mill race for fish." for i in range(150)
    )
    env = {"MEMLAKE_EMBED_SYNC_PASSAGES": "1"}

    async def scenario() -> None:
        async with (
            stdio_client(params(tmp_path, env)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            added = await call(session, "add_episode", {"content": long_text})
            assert added.get("vectors_pending", 0) > 0, added
            deadline = time.monotonic() + 45
            while time.monotonic() < deadline:
                got = await call(session, "get_episode", {"id": added["id"]})
                if got.get("vectors_pending", 0) == 0:
                    return
                await anyio.sleep(0.5)
            raise AssertionError(f"passages still pending: {got}")

    run(scenario())


README = Path(__file__).resolve().parents[2] / "README.md"
README_COMMAND, README_DATA = "/home/you/memlake/.venv/bin/memlake", "/home/you/memlake-data"


def readme_snippets() -> list[tuple[str, list[str]]]:
    """(command, args) of each client config in the README's stdio section."""
    section = README.read_text().split("## Desktop clients (stdio)", 1)[1].split("\n## ", 1)[0]
    found = []
    for block in re.findall(r"```json\n(.*?)```", section, re.S):
        server = json.loads(block)["mcpServers"]["memlake"]
        found.append((server["command"], server["args"]))
    for line in re.findall(r"^claude mcp add memlake -- (.+)$", section, re.M):
        command, *args = shlex.split(line)
        found.append((command, args))
    return found


def test_the_readme_snippets_run(tmp_path: Path) -> None:
    """Claude Desktop's, Cursor's and Claude Code's config, as the README gives them, with
    the placeholders replaced by this checkout's paths; started from / as a desktop app may."""
    snippets = readme_snippets()
    assert len(snippets) == 3, snippets
    memlake = str(Path(sys.executable).parent / "memlake")

    async def scenario(i: int, args: list[str]) -> None:
        server = StdioServerParameters(command=memlake, args=args, env=ENV, cwd="/")
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            added = await call(session, "add_episode", {"content": f"snippet {i} works"})
            assert not added["is_error"], added
            listed = await call(session, "list_episodes", {})
            assert len(listed["episodes"]) == i + 1  # one lake for all three

    for i, (command, args) in enumerate(snippets):
        assert command == README_COMMAND and README_DATA in args, (command, args)
        run(scenario(i, [str(tmp_path) if a == README_DATA else a for a in args]))


# --- raw pipes ------------------------------------------------------------------------------


def start(data: Path, **env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "memlake", "stdio", "--data", str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **ENV, **env},
    )


def lines(*messages: Any) -> bytes:
    return b"".join(m if isinstance(m, bytes) else json.dumps(m).encode() + b"\n" for m in messages)


def test_raw_pipe_only_json_lines_on_stdout_and_logs_on_stderr(tmp_path: Path) -> None:
    proc = start(tmp_path, MEMLAKE_MAX_REQUEST_BYTES="4096")
    add = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "add_episode", "arguments": {"content": "queued behind nothing"}},
    }
    # everything at once: requests sent while a tool runs wait and are answered in order
    out, err = proc.communicate(
        lines(
            INIT,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            b"{oops\n",
            add,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"' + b"z" * 9000 + b'"}}\n',
            {"jsonrpc": "2.0", "id": 4, "method": "ping"},
        ),
        timeout=60,
    )
    assert proc.returncode == 0, err.decode()  # EOF on stdin: a clean exit
    assert out.endswith(b"\n")
    answers = [json.loads(line) for line in out.split(b"\n")[:-1]]  # every line is JSON
    assert [a["id"] for a in answers] == [0, None, 1, 2, None, 4]
    assert answers[1]["error"]["code"] == -32700
    assert answers[2]["result"]["isError"] is False
    assert answers[4]["error"] == {
        "code": -32600,
        "message": "Request over 4096 bytes; send smaller messages",
    }
    stderr = err.decode()
    assert f"lake {tmp_path.resolve()}" in stderr  # logs go to stderr
    assert "rpc tools/call tool=add_episode" in stderr and "Traceback" not in stderr


def test_stdio_toolsets_flag_limits_the_tools(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlake", "stdio", "--data", str(tmp_path), "--toolsets", "graph"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **ENV},
    )
    call = {"name": "add_episode", "arguments": {"content": "not offered here"}}
    out, err = proc.communicate(
        lines(
            INIT,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
        ),
        timeout=60,
    )
    assert proc.returncode == 0, err.decode()
    answers = {a["id"]: a for a in map(json.loads, out.splitlines())}
    names = {t["name"] for t in answers[1]["result"]["tools"]}
    assert "add_episode_relationship" in names and "add_episode" not in names
    assert answers[2]["error"]["code"] == -32602


def test_eof_before_anything_exits_0(tmp_path: Path) -> None:
    proc = start(tmp_path)
    out, err = proc.communicate(b"", timeout=60)
    assert (proc.returncode, out) == (0, b""), err.decode()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_idle_exits_0_without_a_traceback(tmp_path: Path, signum: int) -> None:
    proc = start(tmp_path)
    assert proc.stdin and proc.stdout
    proc.stdin.write(lines(INIT))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0  # serving, now waiting for a line
    time.sleep(0.2)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert out == b"" and b"Traceback" not in err


STRAY = """
import os, sys
from memlake.mcp.stdio import claimed_stdio

with claimed_stdio() as (wire_in, wire_out):
    print("a stray print")
    os.write(1, b"a stray C-level write\\n")
    assert sys.stdin.read() == ""  # fd 0 is /dev/null: nobody else reads the wire
    wire_out.write(b"echo " + wire_in.readline())
    wire_out.flush()
print("after: stdout is back")
"""


def test_stray_output_goes_to_stderr_never_onto_the_wire() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", STRAY], input=b"the wire\n", capture_output=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == b"echo the wire\nafter: stdout is back\n"
    assert b"a stray print\n" in proc.stderr and b"a stray C-level write\n" in proc.stderr


def test_the_stdio_door_does_not_load_the_http_stack(tmp_path: Path) -> None:
    code = (
        "import sys; from memlake.cli import main; rc = main(['stdio', '--data', sys.argv[1]]);"
        " print(rc, 'uvicorn' in sys.modules, 'memlake.mcp.server' in sys.modules, file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], input=b"", capture_output=True, timeout=60
    )
    assert proc.stderr.decode().strip().splitlines()[-1] == "0 False False", proc.stderr.decode()


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["--data", "/proc/no-such-dir/lake"], "cannot use data directory /proc/no-such-dir"),
        (["--data", "{tmp}", "--tenant", "Not A Tenant"], "is not a tenant name"),
    ],
)
def test_a_bad_lake_or_tenant_is_one_line_on_stderr(
    tmp_path: Path, args: list[str], expect: str
) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = subprocess.run(
        [sys.executable, "-m", "memlake", "stdio", *argv],
        input=lines(INIT),
        capture_output=True,
        timeout=60,
        env={**os.environ, **ENV},
    )
    assert proc.returncode == 2 and proc.stdout == b""
    err = proc.stderr.decode()
    assert err.startswith("memlake: ") and expect in err and "Traceback" not in err, err
