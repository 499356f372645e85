"""Driving the SAM CLI for tests/e2e/test_sam_local.py: infra/sam_local.sh prepare, a moto S3
server the function containers reach, and `sam local invoke / start-lambda / start-api`."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from moto.server import ThreadedMotoServer

ROOT = Path(__file__).resolve().parents[2]
SAM_HOME = Path(os.environ.get("MEMLAKE_SAM_HOME") or Path.home() / ".cache/memlake-sam")
SAM = SAM_HOME / "venv/bin/sam"
BUILT = ROOT / ".aws-sam/build/template.yaml"
BUCKET = "memlake-sam-local"
TENANT = "demo"
#: parameters without defaults; SAM resolves !Ref from these at invoke time too
OVERRIDES = "JwtIssuer=https://issuer.invalid JwtAudience=sam-local"
NO_RUNTIME = 3  # infra/sam_local.sh: no container runtime can be had here


def docker_running() -> bool:
    try:
        probe = subprocess.run(["docker", "info"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def stop_runtime() -> None:
    """Stop the dockerd that `prepare` started (infra/sam_local.sh stop: only that one)."""
    subprocess.run(["bash", "infra/sam_local.sh", "stop"], cwd=ROOT, timeout=120, check=False)


def prepare() -> bool:
    """Runtime, SAM CLI, base image and `sam build`; skip where no container runtime exists.
    True when this call started the container daemon (the caller stops it when done: a test
    session leaves the machine as it found it; CI's prepared daemon was running before)."""
    started = not docker_running()
    proc = subprocess.run(
        ["bash", "infra/sam_local.sh", "prepare"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0 and started:  # a daemon it started before failing goes too
        stop_runtime()
    if proc.returncode == NO_RUNTIME:
        pytest.skip(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, f"infra/sam_local.sh prepare failed:\n{proc.stderr[-4000:]}"
    assert SAM.is_file() and BUILT.is_file()
    return started


def sam_env() -> dict[str, str]:
    """The SAM CLI's environment: fake credentials (moto takes any), no telemetry."""
    return {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "SAM_CLI_TELEMETRY": "0",
        "PYTHONUNBUFFERED": "1",  # the function's log lines reach the log file as they come
    }


def bridge_gateway() -> str:
    """The host's address on Docker's default bridge. SAM leaves function containers on that
    bridge (`--docker-network host` is not applied to them), so the moto server listens here:
    the host side of docker0, on this machine only."""
    out = subprocess.run(
        ["docker", "network", "inspect", "bridge", "--format", "{{json .IPAM.Config}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    config = json.loads(out)[0]
    if config.get("Gateway"):
        return str(config["Gateway"])
    return str(next(ipaddress.ip_network(config["Subnet"]).hosts()))  # Docker's default


@contextlib.contextmanager
def moto_lake() -> Iterator[tuple[str, Any]]:
    """A moto S3 server with the bucket created; yields (endpoint, s3 client)."""
    host = bridge_gateway()
    with socket.socket() as s:
        s.bind((host, 0))
        port = int(s.getsockname()[1])
    server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
    server.start()
    endpoint = f"http://{host}:{port}"
    s3 = boto3.client(
        "s3",
        region_name="us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    s3.create_bucket(Bucket=BUCKET)
    try:
        yield endpoint, s3
    finally:
        server.stop()


def env_vars_file(path: Path, endpoint: str, **more: str) -> Path:
    """`--env-vars`: the same values for every function (SAM sets only declared variables)."""
    values = {
        **more,
        "MEMLAKE_STORE": "s3",
        "MEMLAKE_BUCKET": BUCKET,
        "AWS_ENDPOINT_URL_S3": endpoint,
        "MEMLAKE_CURSOR_KEY": "sam-local-cursor-key-0123456789abcdef",
        "MEMLAKE_SAM_LOCAL_TENANT": TENANT,
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
    path.write_text(json.dumps({"Parameters": values}))
    return path


def invoke(logical_id: str, event: Path, env_vars: Path) -> dict[str, Any]:
    """`sam local invoke`: a new container for this one call; the function's result."""
    return invoke_timed(logical_id, event, env_vars)[0]


def invoke_timed(
    logical_id: str, event: Path, env_vars: Path
) -> tuple[dict[str, Any], dict[str, float]]:
    """`sam local invoke` and the emulator's REPORT line of that one call: its Duration (the
    runtime's start, the imports and the handler: a fresh container's first call) in ms, and
    the wall time of the whole `sam local invoke` (container start included) in seconds."""
    started = time.perf_counter()
    proc = subprocess.run(
        [str(SAM), "local", "invoke", logical_id, "-t", str(BUILT), "-e", str(event)]
        + ["--env-vars", str(env_vars), "--parameter-overrides", OVERRIDES],
        cwd=ROOT,
        env=sam_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert lines, f"{logical_id} printed no result:\n{proc.stderr[-4000:]}"
    report = re.findall(r"REPORT RequestId: \S+.*?\tDuration: ([0-9.]+) ms", proc.stderr)
    timings = {"wall_s": round(wall, 3)}
    if report:
        timings["report_ms"] = float(report[0])
    return json.loads(lines[-1]), timings


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"sam exited early:\n{log.read_text()[-4000:]}"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.5)
    raise AssertionError(f"sam did not listen on {port}:\n{log.read_text()[-4000:]}")


@contextlib.contextmanager
def sam_server(command: str, env_vars: Path, log: Path) -> Iterator[int]:
    """`sam local start-lambda` or `start-api` on a free loopback port, warm containers (each
    function keeps its own container between calls); stopped and its containers removed after."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    args = [str(SAM), "local", command, "-t", str(BUILT), "-p", str(port)]
    args += ["--env-vars", str(env_vars), "--parameter-overrides", OVERRIDES]
    args += ["--warm-containers", "LAZY"]
    with log.open("wb") as out:
        proc = subprocess.Popen(args, cwd=ROOT, env=sam_env(), stdout=out, stderr=out)
        try:
            _wait_for_port(port, proc, log, 120)
            yield port
        finally:
            proc.terminate()  # SAM removes its warm containers on SIGTERM
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def lambda_client(port: int) -> Any:
    return boto3.client(
        "lambda",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(read_timeout=600, retries={"max_attempts": 0}),
    )


def lambda_invoke(client: Any, logical_id: str, event: dict[str, Any]) -> dict[str, Any]:
    resp = client.invoke(FunctionName=logical_id, Payload=json.dumps(event).encode())
    assert "FunctionError" not in resp, (logical_id, resp)
    return json.loads(resp["Payload"].read())  # type: ignore[no-any-return]
