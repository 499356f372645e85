"""Every function in template.yaml, invoked the way `sam local invoke <Fn> -e event.json` does:
its image command resolved to a file, imported, and called with its event.json on moto S3."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from memlake.tools.registry import TOOL_NAMES, get_tool

from .lambda_helpers import FUNCTIONS, FakeContext, Stack, code_path, handler_of


def _folder(handler: str) -> str:
    return handler.split(".")[1]  # functions.<folder>.app.lambda_handler


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_function_runs_with_its_sample_event(logical_id: str, stack: Stack) -> None:
    # GIVEN the function's handler as the image command names it, and its sample event
    resource = FUNCTIONS[logical_id]
    handler = handler_of(resource)
    path = code_path(handler)
    assert path.is_file(), f"{logical_id}: {handler} has no file {path}"
    event_path = path.parent / "event.json"
    assert event_path.is_file(), f"{logical_id}: no sample event {event_path}"
    event = json.loads(event_path.read_text())

    # WHEN it is imported and invoked like the Lambda runtime would, in its environment
    result = stack.use(logical_id).invoke(logical_id, event, FakeContext(function_name=logical_id))
    module = sys.modules[handler.rsplit(".", 1)[0]]
    assert Path(str(module.__file__)).resolve() == path.resolve()

    # THEN it answers as its door promises
    folder = _folder(handler)
    if folder == "mcp":
        assert result["statusCode"] == 200, result
        body = json.loads(result["body"])
        assert body["result"]["isError"] is False, body
        assert result["headers"]["x-request-id"] == event["requestContext"]["requestId"]
    elif folder == "maintenance":
        assert result["failed"] == [] and result["tenants"] >= 0
    else:
        _check_tool_result(folder, result)


def _check_tool_result(tool: str, result: dict[str, Any]) -> None:
    """A sample must hold valid arguments: success, or not_found for ids of an empty lake."""
    if result.get("isError"):
        assert result["error"]["code"] == "not_found", (tool, result)
        return
    spec = get_tool(tool)
    assert spec is not None
    spec.output_model.model_validate(result)


def test_add_then_get_through_the_tool_functions(stack: Stack) -> None:
    stack.use("AddEpisodeFunction")
    added = stack.invoke(
        "AddEpisodeFunction", {"tenant": "demo", "arguments": {"content": "sam local invoke works"}}
    )
    got = stack.invoke("GetEpisodeFunction", {"tenant": "demo", "arguments": {"id": added["id"]}})
    assert got["content"] == "sam local invoke works"
    keys = stack.object_keys()
    assert keys and all(k.startswith("tenants/demo/") for k in keys)


def test_every_registered_tool_has_a_function() -> None:
    handlers = {handler_of(r) for r in FUNCTIONS.values()}
    for name in TOOL_NAMES:
        assert f"functions.{name}.app.lambda_handler" in handlers, f"{name} has no function"


def test_the_maintenance_function_checks_tenants_on_request(stack: Stack) -> None:
    stack.use("AddEpisodeFunction")
    stack.invoke("AddEpisodeFunction", {"tenant": "demo", "arguments": {"content": "checked"}})
    stack.use("MaintenanceFunction")
    ctx = FakeContext(function_name="MaintenanceFunction")
    result = stack.invoke("MaintenanceFunction", {"action": "check"}, ctx)
    assert result["checked"] >= 1 and result["damaged"] == [], result
    assert all(r["clean"] for r in result["reports"])
    bad = stack.invoke("MaintenanceFunction", {"action": "check", "tenant": "../x"}, ctx)
    assert bad["error"]["code"] == "invalid_argument", bad
