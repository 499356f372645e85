"""Page cursors across instances on moto S3: every instance of one deployment accepts the
others' cursors (Lambda runs many), another deployment's key does not, and a forged cursor
through the API Gateway adapter is a tool error, not a 500."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.cursors import KEY_OBJECT
from memlake.errors import InvalidArgument
from memlake.services import Services
from memlake.store.s3 import S3Store
from memlake.tools.registry import get_tool

from .lambda_helpers import (
    FakeContext,
    apigw_event,
    call,
    functions,
    handler_of,
    import_handler,
    lambda_env,
    load_template,
    reset_process_state,
    resolve_env,
)

BUCKET = "memlake-cursors"
TEMPLATE = load_template()
MCP = functions(TEMPLATE)["McpFunction"]


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def instance(client: Any, key: str = "") -> ToolContext:
    """One Lambda instance: its own Services (store, lake, caches) on the shared bucket."""
    settings = Settings(store="s3", bucket=BUCKET, cursor_key=key)
    services = Services.build(settings, S3Store(BUCKET, client=client))
    return ToolContext(Principal("acme"), services)


def tool(ctx: ToolContext, tool_name: str, **args: Any) -> dict[str, Any]:
    spec = get_tool(tool_name)
    assert spec is not None
    return spec.run(ctx, spec.input_model.model_validate(args)).model_dump(mode="json")  # type: ignore[no-any-return]


def test_instances_of_one_deployment_accept_each_others_cursors(s3: Any) -> None:
    first, second = instance(s3), instance(s3)
    for i in range(3):
        tool(first, "upsert_concept", name=f"n{i}")
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix=KEY_OBJECT)
    cursor = tool(first, "find_concepts", limit=2).get("next_cursor")
    stored = s3.list_objects_v2(Bucket=BUCKET, Prefix=KEY_OBJECT)["Contents"]
    assert len(stored) == 1  # the generated key, made once, outside tenants/
    assert [
        c["name"] for c in tool(second, "find_concepts", limit=2, cursor=cursor)["concepts"]
    ] == ["n2"]
    # with MEMLAKE_CURSOR_KEY every instance signs alike; another deployment's key does not fit
    keyed = tool(instance(s3, "a" * 40), "find_concepts", limit=2).get("next_cursor")
    assert tool(instance(s3, "a" * 40), "find_concepts", limit=2, cursor=keyed)["count"] == 1
    for other in (instance(s3, "b" * 40), second):
        with pytest.raises(InvalidArgument, match="cursor is not valid"):
            tool(other, "find_concepts", limit=2, cursor=keyed)


def test_the_template_gives_every_function_one_generated_key() -> None:
    env = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert "CursorKeySecret" in env["MEMLAKE_CURSOR_KEY"]["Fn::Sub"]
    secret = TEMPLATE["Resources"]["CursorKeySecret"]
    assert secret["Type"] == "AWS::SecretsManager::Secret"
    assert secret["Properties"]["GenerateSecretString"]["PasswordLength"] >= 32


def test_cursors_through_the_lambda_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    with lambda_env(monkeypatch, resolve_env(TEMPLATE, MCP)):
        handler = import_handler(handler_of(MCP))
        claims = {"sub": "alice", "jti": "j1"}

        def result(name: str, args: dict[str, Any]) -> dict[str, Any]:
            resp = handler(apigw_event(call(name, args), claims=claims), FakeContext())
            assert resp["statusCode"] == 200, resp
            return json.loads(resp["body"])["result"]  # type: ignore[no-any-return]

        for i in range(3):
            result("add_thread", {"messages": [{"role": "user", "content": f"m{i}"}]})
        cursor = result("get_pending_threads", {"limit": 2})["structuredContent"].get("next_cursor")
        reset_process_state()  # the next request lands on another (cold) instance
        assert (
            result("get_pending_threads", {"limit": 2, "cursor": cursor})["structuredContent"][
                "count"
            ]
            == 1
        )
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        for position in (["x", 1], [1.5, None], [0, "0"]):
            forged = base64.urlsafe_b64encode(json.dumps([position, *raw[1:]]).encode()).decode()
            out = result("get_pending_threads", {"limit": 2, "cursor": forged})
            assert out["isError"], out
            error = json.loads(out["content"][0]["text"])["error"]
            assert error["code"] == "invalid_argument" and error["hint"], error
