"""The MCP function behind API Gateway (payload 2.0, JWT authorizer claims) on moto S3:
the adapter, auth, tenant isolation, correlation ids and what the logs may not contain."""

from __future__ import annotations

import io
import json
import re
import sys
from typing import Any

import pytest

from memlake.ids import TENANT_PATTERN
from memlake.mcp.apigw import tenant_for_claim
from memlake.tools.registry import TOOL_NAMES

from .lambda_helpers import MCP, FakeContext, Stack, apigw_event, call, rpc

ALICE = {"sub": "alice", "jti": "jti-alice-1"}
BOB = {"sub": "bob", "jti": "jti-bob-1"}


def tool(stack: Stack, claims: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
    """structuredContent of a successful call, or {"isError": True, "error": {...}}."""
    resp = stack.mcp(call(name, args), claims)
    assert resp["statusCode"] == 200, resp
    result = json.loads(resp["body"])["result"]
    if result["isError"]:
        return {"isError": True, **json.loads(result["content"][0]["text"])}
    return result["structuredContent"]  # type: ignore[no-any-return]


def test_no_claims_is_401(stack: Stack) -> None:
    for claims in (None, {}, {"sub": ""}, {"sub": None}, {"email": "x@example.com"}):
        resp = stack.mcp(rpc("initialize", {"protocolVersion": "2025-11-25"}), claims)
        assert resp["statusCode"] == 401, claims
        assert resp["headers"]["www-authenticate"].startswith("Bearer")


def test_initialize_with_claims_and_the_request_id(stack: Stack) -> None:
    event = apigw_event(rpc("initialize", {"protocolVersion": "2025-11-25"}), claims=ALICE)
    resp = stack.invoke(MCP, event)
    assert resp["statusCode"] == 200
    assert json.loads(resp["body"])["result"]["serverInfo"]["name"]
    assert resp["headers"]["x-request-id"] == event["requestContext"]["requestId"]
    assert resp["isBase64Encoded"] is False


def test_base64_body_stage_path_and_methods(stack: Stack) -> None:
    body = rpc("tools/list")
    assert stack.mcp(body, ALICE, base64_body=True)["statusCode"] == 200
    assert stack.mcp(body, ALICE, path="/prod/mcp", stage="prod")["statusCode"] == 200
    assert stack.mcp(body, ALICE, path="/other")["statusCode"] == 404
    bad = apigw_event(body, claims=ALICE)
    bad.update(body="%%% not base64", isBase64Encoded=True)
    resp = stack.invoke(MCP, bad)
    assert resp["statusCode"] == 400
    got = stack.mcp(None, ALICE, method="GET")
    assert got["statusCode"] == 405 and got["headers"]["allow"] == "POST"
    assert stack.mcp(b"{not json", ALICE)["statusCode"] == 400


def test_tenant_isolation(stack: Stack) -> None:
    # GIVEN alice's episode
    mine = tool(stack, ALICE, "add_episode", {"content": "alice's zebra migration notes"})
    other = tool(stack, ALICE, "add_episode", {"content": "alice's second episode"})
    # WHEN bob uses alice's ids
    assert tool(stack, BOB, "get_episode", {"id": mine["id"]})["error"]["code"] == "not_found"
    assert tool(stack, BOB, "delete_episode", {"id": mine["id"]})["deleted"] == 0
    assert tool(stack, BOB, "list_episodes", {})["episodes"] == []
    if "search_episodes" in TOOL_NAMES:
        found = tool(stack, BOB, "search_episodes", {"query": "zebra migration"})
        assert found.get("episodes") == [], found
    if "add_episode_relationship" in TOOL_NAMES:
        link = {"from_episode_id": mine["id"], "to_episode_id": other["id"]}
        linked = tool(
            stack, BOB, "add_episode_relationship", {**link, "relationship_type": "follows"}
        )
        assert linked.get("isError") and linked["error"]["code"] == "not_found", linked
    # THEN alice still has it, and nothing was written outside her folder
    assert tool(stack, ALICE, "get_episode", {"id": mine["id"]})["content"].startswith("alice")
    assert tool(stack, ALICE, "list_episodes", {})["count"] == 2
    keys = stack.object_keys()
    assert keys and all(k.startswith("tenants/alice/") for k in keys), keys


def test_claims_that_are_not_tenant_names(stack: Stack) -> None:
    # GIVEN subjects that differ only in case or by characters a tenant cannot hold
    upper, lower = {"sub": "auth0|Alice"}, {"sub": "auth0|alice"}
    added = tool(stack, upper, "add_episode", {"content": "upper"})
    # THEN each maps to its own valid tenant, and they do not see each other
    assert tool(stack, lower, "get_episode", {"id": added["id"]})["error"]["code"] == "not_found"
    assert tool(stack, upper, "get_episode", {"id": added["id"]})["content"] == "upper"
    tenants = {key.split("/")[1] for key in stack.object_keys()}
    assert tenants == {tenant_for_claim("auth0|Alice")}
    assert re.fullmatch(r"auth0-alice-[0-9a-f]{16}", tenant_for_claim("auth0|Alice"))


def test_tenant_claim_is_configurable(stack: Stack) -> None:
    stack.use(MEMLAKE_TENANT_CLAIM="custom:org")
    body = call("add_episode", {"content": "org memory"})
    assert stack.mcp(body, {"sub": "u1"})["statusCode"] == 401
    assert stack.mcp(body, {"sub": "u1", "custom:org": "acme"})["statusCode"] == 200
    keys = stack.object_keys()
    assert keys and all(k.startswith("tenants/acme/") for k in keys)


def test_sam_local_tenant_only_under_sam_local(stack: Stack) -> None:
    """sam local has no JWT authorizer: MEMLAKE_SAM_LOCAL_TENANT names the tenant of requests
    without claims, but only where SAM CLI runs the function (AWS_SAM_LOCAL=true)."""
    body = call("add_episode", {"content": "local memory"})
    stack.use(MEMLAKE_SAM_LOCAL_TENANT="dev")  # deployed: the variable alone opens nothing
    assert stack.mcp(body)["statusCode"] == 401
    stack.use(MEMLAKE_SAM_LOCAL_TENANT="dev", AWS_SAM_LOCAL="true")
    assert stack.mcp(body)["statusCode"] == 200
    assert stack.mcp(body, ALICE)["statusCode"] == 200  # claims, when an event has them, decide
    assert {key.split("/")[1] for key in stack.object_keys()} == {"dev", "alice"}


def test_logs_carry_the_correlation_id_but_no_content(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "the launch code is 7419-SECRET"
    event = apigw_event(
        call("add_episode", {"content": secret, "summary": secret}),
        claims=ALICE,
        headers={"authorization": "Bearer eyJhbGciOiJSUzI1NiJ9.SECRET-TOKEN.sig"},
    )
    handler = stack.handler()
    # the Powertools handler keeps the stdout it was built with: point it at a buffer
    stream = sys.modules["functions.mcp.app"].logger.registered_handler
    buf = io.StringIO()
    old = stream.setStream(buf)
    try:
        handler(event, FakeContext())
        handler(apigw_event(call("get_episode", {"id": "nope!"}), claims=ALICE), FakeContext())
    finally:
        stream.setStream(old)
    out = capsys.readouterr()
    logs = buf.getvalue() + out.out + out.err
    lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    summary = [line for line in lines if line.get("message") == "mcp request"]
    assert summary, logs
    assert summary[0]["correlation_id"] == event["requestContext"]["requestId"]
    assert summary[0]["tool"] == "add_episode" and summary[0]["tenant"] == "alice"
    assert summary[0]["rpc_method"] == "tools/call" and summary[0]["tool_error"] is False
    assert summary[1]["tool"] == "get_episode" and summary[1]["tool_error"] is True
    assert summary[1]["status"] == 200
    assert summary[0]["token_id"] != "jti-alice-1"
    assert "7419-SECRET" not in logs and "SECRET-TOKEN" not in logs


@pytest.mark.parametrize(
    "value",
    [
        "alice",
        "Alice",
        "auth0|5f7c8ec7c33c6c004bbafe82",
        "x" * 300,
        "élodie@example.com",
        "---",
        "_",
    ],
)
def test_tenant_for_claim_is_always_a_valid_tenant(value: str) -> None:
    tenant = tenant_for_claim(value)
    assert TENANT_PATTERN.match(tenant), tenant
    assert (tenant == value) == bool(TENANT_PATTERN.match(value))
    assert tenant_for_claim(value) == tenant  # stable across calls and processes


def test_claims_are_taken_exactly() -> None:
    from memlake.mcp.apigw import principal_from_claims

    padded = principal_from_claims({"sub": " alice"}, "sub")
    assert padded is not None and padded.tenant != "alice"
    assert principal_from_claims({"sub": "   "}, "sub") is None
    assert principal_from_claims({"sub": "x" * 2000}, "sub") is None
    assert principal_from_claims({"sub": ["alice"]}, "sub") is None
