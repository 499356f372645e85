"""The AWS path on this machine: `sam build` of template.yaml, then every function in its own
container through the SAM CLI against a moto S3 server, and MCP through `sam local start-api`
with the real `mcp` client. Skips (never fails) where no container runtime can be had; CI
prepares one (.ci/run). See docs/decisions/1160-sam-local.md."""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from memlake.tools.registry import get_tool

from .mcp_helpers import call, connect, run
from .sam_local import (
    BUCKET,
    BUILT,
    ROOT,
    TENANT,
    env_vars_file,
    invoke,
    invoke_timed,
    lambda_client,
    lambda_invoke,
    moto_lake,
    prepare,
    sam_server,
    stop_runtime,
)

pytestmark = [pytest.mark.sam, pytest.mark.slow]

TIMINGS = ROOT / ".aws-sam/sam-local-timings.json"


class CfnLoader(yaml.SafeLoader):
    """Reads CloudFormation short tags (!Ref ...) as plain values: only names are needed."""


CfnLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def template_functions(path: Path = ROOT / "template.yaml") -> dict[str, str]:
    """Logical id -> the folder under functions/ holding its sample event (the image command
    names it: functions.<folder>.app.lambda_handler)."""
    template = yaml.load(path.read_text(), Loader=CfnLoader)  # noqa: S506 (a SafeLoader)
    out = {}
    for lid, res in template["Resources"].items():
        if res["Type"] == "AWS::Serverless::Function":
            out[lid] = res["Properties"]["ImageConfig"]["Command"][0].split(".")[1]
    return out


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    status = Path(tempfile.gettempdir())
    before = set(status.glob("*_rapid-*.building.status"))  # the SAM CLI's notes
    started = prepare()
    try:
        folder = tmp_path_factory.mktemp("sam")
        with moto_lake() as (endpoint, s3):
            yield {"dir": folder, "env": env_vars_file(folder / "env.json", endpoint), "s3": s3}
    finally:
        if started:  # the daemon this session started goes with it
            stop_runtime()
        for left in set(status.glob("*_rapid-*.building.status")) - before:
            left.unlink(missing_ok=True)


def _event(lake: dict[str, Any], name: str, body: dict[str, Any]) -> Path:
    path: Path = lake["dir"] / f"{name}.json"
    path.write_text(json.dumps(body))
    return path


@pytest.fixture(scope="module")
def added(lake: dict[str, Any]) -> dict[str, Any]:
    """add_episode's sample event through `sam local invoke` (its own container)."""
    return invoke("AddEpisodeFunction", ROOT / "functions/add_episode/event.json", lake["env"])


def test_add_then_get_in_two_containers(lake: dict[str, Any], added: dict[str, Any]) -> None:
    sample = json.loads((ROOT / "functions/add_episode/event.json").read_text())["arguments"]
    assert added["content"] == sample["content"] and added["context"] == sample["context"]
    got = invoke(
        "GetEpisodeFunction",
        _event(lake, "get", {"tenant": TENANT, "arguments": {"id": added["id"]}}),
        lake["env"],
    )
    assert got["id"] == added["id"] and got["content"] == sample["content"]
    keys = [o["Key"] for o in lake["s3"].list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert keys and all(k.startswith(f"tenants/{TENANT}/") for k in keys)


SEARCH_TIMINGS = ROOT / ".aws-sam/sam-local-search-timings.json"
#: a fresh container's first search, imports and the runtime's start included: twice the
#: 1.5 s cold target (issue 25), which is a benchmark's to hold (tests/bench/cold_lambda_pair.py,
#: paired across trees); one container on a shared CI host measured 1.19-1.60 s for the same
#: code, so this bound catches what a regression here looks like (kernels compiled, 10-20 s; a
#: model or a service client built twice, seconds), not the host's noise (decision 2513)
COLD_SEARCH_MS = 3000
#: numba's kernels loaded before the first search: well under this unless they compiled
NO_COMPILE_MS = 5000


def test_search_finds_the_episode_in_a_fresh_container_within_the_cold_budget(
    lake: dict[str, Any], added: dict[str, Any]
) -> None:
    """The first search of a new container: with MEMLAKE_KERNELS=auto (the template's: numpy's
    kernels serve it, numba's load after it) and with MEMLAKE_KERNELS=numba, which loads
    numba's kernels before answering; from the image's cache, copied to /tmp, they load in
    well under a second, where compiling them would take 10-20 s (decision 2502). auto well
    within twice the 1.5 s cold target (measured: 879-1,595 ms; numba's 1,224-2,225 ms); written to
    .aws-sam/sam-local-search-timings.json for docs/performance.md."""
    event = ROOT / "functions/search_episodes/event.json"
    endpoint = json.loads(lake["env"].read_text())["Parameters"]["AWS_ENDPOINT_URL_S3"]
    numba_env = env_vars_file(lake["dir"] / "env-numba.json", endpoint, MEMLAKE_KERNELS="numba")
    timings = {}
    for name, env in (("auto", lake["env"]), ("numba", numba_env)):
        found, took = invoke_timed("SearchEpisodesFunction", event, env)
        assert added["id"] in [r["id"] for r in found["episodes"]], found
        timings[name] = took
    SEARCH_TIMINGS.write_text(json.dumps(timings, indent=2))
    print(f"SearchEpisodesFunction, first search of a new container: {timings}")
    # the template's configuration answers within the cold budget; numba's kernels loaded
    # before answering add ~0.3-0.6 s, and would add 10-20 s if they compiled
    assert timings["auto"]["report_ms"] < COLD_SEARCH_MS, timings
    assert timings["numba"]["report_ms"] < NO_COMPILE_MS, timings


@pytest.fixture(scope="module")
def start_lambda(lake: dict[str, Any], added: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """`sam local start-lambda`; its first call is the MCP function's cold start."""
    log = lake["dir"] / "start-lambda.log"
    with sam_server("start-lambda", lake["env"], log) as port:
        client = lambda_client(port)
        yield {"client": client, "timings": _mcp_cold_start(client, log)}


def _mcp_cold_start(client: Any, log: Path) -> dict[str, Any]:
    """initialize twice on a new MCP function container: wall time through SAM, and the
    emulator's REPORT Duration (its first one includes the runtime's start and imports)."""
    sample = json.loads((ROOT / "functions/mcp/event.json").read_text())
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}
    init["params"] = {"protocolVersion": "2025-11-25", "capabilities": {}}
    init["params"]["clientInfo"] = {"name": "sam-local-test", "version": "1"}
    timings: dict[str, Any] = {}
    for run_name in ("cold", "warm"):
        started = time.perf_counter()
        resp = lambda_invoke(client, "McpFunction", {**sample, "body": json.dumps(init)})
        timings[f"{run_name}_wall_s"] = round(time.perf_counter() - started, 3)
        timings[f"{run_name}_response"] = resp
    reports = re.findall(r"REPORT RequestId: \S+.*?\tDuration: ([0-9.]+) ms", log.read_text())
    timings["cold_report_ms"], timings["warm_report_ms"] = (float(d) for d in reports[:2])
    return timings


def test_mcp_cold_start_in_its_container(start_lambda: dict[str, Any]) -> None:
    """First call of the MCP function (container, runtime interface emulator and client,
    imports, initialize), written to .aws-sam/sam-local-timings.json for docs/performance.md."""
    timings = start_lambda["timings"]
    for run_name in ("cold", "warm"):
        resp = timings.pop(f"{run_name}_response")
        assert resp["statusCode"] == 200, resp
        assert json.loads(resp["body"])["result"]["serverInfo"]["name"]
    assert timings["warm_report_ms"] < timings["cold_report_ms"]
    TIMINGS.write_text(json.dumps(timings, indent=2))
    print(f"McpFunction initialize through sam local start-lambda: {timings}")


@pytest.mark.parametrize("logical_id", sorted(template_functions()))
def test_every_function_answers_its_sample_event(
    start_lambda: dict[str, Any], logical_id: str
) -> None:
    folder = template_functions(BUILT)[logical_id]  # what sam build wrote names the same
    event = json.loads((ROOT / "functions" / folder / "event.json").read_text())
    result = lambda_invoke(start_lambda["client"], logical_id, event)
    if folder == "mcp":  # list_episodes with the sample's claims (sub=demo)
        assert result["statusCode"] == 200, result
        body = json.loads(result["body"])
        assert body["result"]["isError"] is False, body
        assert result["headers"]["x-request-id"] == event["requestContext"]["requestId"]
    elif folder == "maintenance":
        assert result["failed"] == [] and result["tenants"] >= 1, result
    elif result.get("isError"):  # the samples' ids do not exist in this lake
        assert result["error"]["code"] == "not_found", (logical_id, result)
    else:
        spec = get_tool(folder)
        assert spec is not None
        spec.output_model.model_validate(result)


@pytest.mark.parametrize(
    ("event", "says"),
    [
        ({"tenant": TENANT, "arguments": {}}, "content: Field required"),
        ({"tenant": TENANT, "arguments": {"content": 42}}, "content: Input should be"),
        ({"arguments": {"content": "no tenant"}}, "event.tenant is missing"),
        ({"tenant": "Bad Tenant!", "arguments": {"content": "x"}}, "is not valid"),
    ],
)
def test_bad_event_is_the_tools_clear_error(
    start_lambda: dict[str, Any], event: dict[str, Any], says: str
) -> None:
    result = lambda_invoke(start_lambda["client"], "AddEpisodeFunction", event)
    assert result["isError"] is True, result
    assert result["error"]["code"] == "invalid_argument", result
    assert says in result["error"]["message"] and result["error"]["hint"], result


def test_mcp_through_start_api_with_the_mcp_client(lake: dict[str, Any]) -> None:
    """No JWT authorizer under sam local: the tenant comes from MEMLAKE_SAM_LOCAL_TENANT."""

    async def scenario(url: str) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        async with connect(url) as client:  # initialize
            tools = [t.name for t in (await client.list_tools()).tools]
            stored = await call(
                client,
                "add_episode",
                {"content": "through the emulated API Gateway", "context": "sam-api"},
            )
            found = await call(
                client, "search_episodes", {"query": "emulated API Gateway", "context": "sam-api"}
            )
            return tools, stored, found

    with sam_server("start-api", lake["env"], lake["dir"] / "start-api.log") as port:
        tools, stored, found = run(scenario(f"http://127.0.0.1:{port}/mcp"))
    assert {"add_episode", "get_episode", "search_episodes"} <= set(tools)
    assert stored["is_error"] is False, stored
    assert stored["id"] in [r["id"] for r in found["episodes"]], found
    keys = [o["Key"] for o in lake["s3"].list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert all(k.startswith(f"tenants/{TENANT}/") for k in keys)
