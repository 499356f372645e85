"""Hostile JSON-RPC on both doors, in-process: the McpHttpApp `memlake serve` runs (local lake)
and the Lambda handler behind API Gateway (moto S3).

Every case: no 500 and no exception, a JSON-RPC error with the right code, a response that is
strict UTF-8 JSON (no lone surrogates, no NaN), and nothing stored. See
docs/decisions/1011-hostile-json-rpc.md.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memlake.config import Settings
from memlake.mcp.http import HttpRequest
from memlake.mcp.server import build_app
from memlake.services import Services
from memlake.store.local import LocalStore
from memlake.tools.registry import TOOL_NAMES, get_tool

from .lambda_helpers import (
    BUCKET,
    FUNCTIONS,
    MCP,
    FakeContext,
    apigw_event,
    deployed,
    handler_of,
    import_handler,
)

ALICE = {"sub": "alice", "jti": "jti-alice-1"}
DOORS = ("local", "lambda")
NO_ID = object()  # the error must answer "id": null


@dataclass
class Reply:
    status: int
    body: bytes


@dataclass
class Door:
    post: Callable[[bytes], Reply]
    objects: Callable[[], dict[str, int]]


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Door:
    data = tmp_path_factory.mktemp("lake")
    app = build_app(Services.build(Settings(data_dir=data), LocalStore(data)), host="127.0.0.1")
    hdrs = {"content-type": "application/json", "accept": "application/json", "host": "127.0.0.1"}

    def post(body: bytes) -> Reply:
        # an exception here is what `memlake serve` answers with a 500
        resp = app.handle(HttpRequest("POST", "/mcp", dict(hdrs), body))
        return Reply(resp.status, resp.body)

    def objects() -> dict[str, int]:
        return {str(p.relative_to(data)): p.stat().st_size for p in Path(data).rglob("*")}

    return Door(post, objects)


@pytest.fixture(scope="module")
def lambda_door() -> Iterator[Door]:
    with pytest.MonkeyPatch.context() as mp, deployed(mp) as stack:
        handler, s3 = stack.handler(), stack.s3

        def post(body: bytes) -> Reply:
            try:
                event = apigw_event(body, claims=ALICE)
            except UnicodeDecodeError:  # bytes that are not UTF-8 come base64-encoded
                event = apigw_event(body, claims=ALICE, base64_body=True)
            return invoke(handler, event)

        def objects() -> dict[str, int]:
            # without the hint: on S3 a write answers before its hint's put lands
            page = s3.list_objects_v2(Bucket=BUCKET)
            found = page.get("Contents", [])
            return {o["Key"]: o["Size"] for o in found if not o["Key"].endswith("/_latest.json")}

        yield Door(post, objects)


def invoke(handler: Any, event: dict[str, Any]) -> Reply:
    out = handler(event, FakeContext())  # raises: the handler let an exception escape
    assert isinstance(out["body"], str) and out["isBase64Encoded"] is False, out
    return Reply(out["statusCode"], out["body"].encode("utf-8"))  # strict: no lone surrogates


@pytest.fixture(params=DOORS)
def door(request: pytest.FixtureRequest) -> Door:
    return request.getfixturevalue("local" if request.param == "local" else "lambda_door")  # type: ignore[no-any-return]


def strict_json(body: bytes) -> Any:
    """What a strict peer (serde_json, Go) accepts: UTF-8, no lone surrogates, no NaN."""

    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} in a response")

    value = json.loads(body.decode("utf-8"), parse_constant=no_constants)
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate
    return value


def exchange(door: Door, body: bytes) -> tuple[int, Any]:
    before = door.objects()
    reply = door.post(body)
    assert reply.status < 500, reply
    assert door.objects() == before, "a rejected request stored something"
    return reply.status, strict_json(reply.body)


def nest(depth: int, leaf: str = "1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


def call_body(name: str, arguments: str) -> bytes:
    text = f'{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{name}",'
    return (text + f'"arguments":{arguments}}}}}').encode()


REQUEST = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
# (case id, body, HTTP status, JSON-RPC code, id to echo)
CASES: list[tuple[str, bytes, int, int, Any]] = [
    # issue 10 defect 3: lone surrogates echoed back
    ("method-lone-surrogate", b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}', 400, -32600, 1),
    ("id-lone-surrogate", b'{"jsonrpc":"2.0","id":"\\udfff","method":"ping"}', 400, -32600, NO_ID),
    ("tool-name-lone-surrogate", call_body("\\ud83d", "{}"), 400, -32602, 1),
    ("notification-method-surrogate", b'{"jsonrpc":"2.0","method":"\\udc00"}', 400, -32600, NO_ID),
    (
        "cursor-lone-surrogate",
        REQUEST[:-1].encode() + b',"params":{"cursor":"\\ud800"}}',
        400,
        -32602,
        1,
    ),
    (
        "utf8-encoded-surrogate",
        b'{"jsonrpc":"2.0","id":1,"method":"\xed\xa0\x80"}',
        400,
        -32700,
        NO_ID,
    ),
    ("not-utf8", b'{"jsonrpc":"2.0","id":1,"method":"\xff"}', 400, -32700, NO_ID),
    # issue 10 defect 4: deep nesting
    ("array-1000-deep", b"[" * 1000 + b"]" * 1000, 400, -32700, NO_ID),
    ("object-100000-deep", nest(100_000).encode(), 400, -32700, NO_ID),
    (
        "params-1000-deep",
        REQUEST[:-1].encode() + b',"params":' + nest(1000).encode() + b"}",
        400,
        -32700,
        NO_ID,
    ),
    (
        "id-1000-deep",
        b'{"jsonrpc":"2.0","method":"ping","id":' + b"[" * 1000 + b"]" * 1000 + b"}",
        400,
        -32700,
        NO_ID,
    ),
    (
        "metadata-500-deep",
        call_body("add_episode", '{"content":"x","metadata":' + nest(500) + "}"),
        400,
        -32700,
        NO_ID,
    ),
    (
        "metadata-65-deep",
        call_body("add_episode", '{"content":"x","metadata":' + nest(65) + "}"),
        400,
        -32700,
        NO_ID,
    ),
    # issue 10 defect 12: ids and methods JSON-RPC calls invalid
    ("id-true", b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', 400, -32600, NO_ID),
    ("id-false", b'{"jsonrpc":"2.0","id":false,"method":"tools/list"}', 400, -32600, NO_ID),
    ("id-null", b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', 400, -32600, NO_ID),
    ("method-null", b'{"jsonrpc":"2.0","id":1,"method":null}', 400, -32600, 1),
    ("method-null-no-id", b'{"jsonrpc":"2.0","method":null}', 400, -32600, NO_ID),
    ("no-method-no-result", b'{"jsonrpc":"2.0","id":1}', 400, -32600, 1),
    ("result-and-error", b'{"jsonrpc":"2.0","id":1,"result":{},"error":{}}', 400, -32600, 1),
    ("id-fraction", b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', 400, -32600, NO_ID),
    ("id-object", b'{"jsonrpc":"2.0","id":{},"method":"tools/list"}', 400, -32600, NO_ID),
    ("id-infinite", b'{"jsonrpc":"2.0","id":1e999,"method":"tools/list"}', 400, -32600, NO_ID),
    # not JSON (RFC 8259): NaN and Infinity would be stored and echoed as invalid JSON
    (
        "metadata-nan",
        call_body("add_episode", '{"content":"x","metadata":{"n":NaN}}'),
        400,
        -32700,
        NO_ID,
    ),
    ("id-infinity", b'{"jsonrpc":"2.0","id":-Infinity,"method":"ping"}', 400, -32700, NO_ID),
]


@pytest.mark.parametrize(
    ("body", "status", "code", "echo"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_hostile_messages_get_json_rpc_errors(
    door: Door, body: bytes, status: int, code: int, echo: Any
) -> None:
    got_status, answer = exchange(door, body)
    assert (got_status, answer["error"]["code"]) == (status, code), answer
    assert answer["jsonrpc"] == "2.0" and answer["id"] == (None if echo is NO_ID else echo)
    assert answer["error"]["message"]


def test_responses_from_the_client_are_still_accepted(door: Door) -> None:
    for body in (
        b'{"jsonrpc":"2.0","id":1,"result":{}}',
        b'{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}',
    ):
        assert door.post(body).status == 202


def tool_error(door: Door, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The {code, message, hint} of a tools/call that must fail as a tool error."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )
    status, answer = exchange(door, body.encode())  # ensure_ascii: surrogates go as \\udxxx escapes
    assert status == 200 and answer["id"] == 7, answer
    assert answer["result"]["isError"] is True, answer
    return json.loads(answer["result"]["content"][0]["text"])["error"]  # type: ignore[no-any-return]


# realistic writes with one bad string each: before, some were stored-and-failed (internal_error)
SURROGATE_WRITES: list[tuple[str, dict[str, Any], str]] = [
    ("add_episode", {"content": "a\ud800b"}, "content"),
    ("add_episode", {"content": "ok", "summary": "\udfff"}, "summary"),
    ("add_episode", {"content": "ok", "context": "proj\ud800"}, "context"),
    ("add_episode", {"content": "ok", "metadata": {"\ud800": "v"}}, "metadata"),
    (
        "add_episode",
        {"content": "ok", "metadata": {"k": ["fine", {"deep": "\udbff"}]}},
        "metadata.k[1].deep",
    ),
    ("add_episode", {"content": "ok", "entity_ids": ["entity:a\udc00"]}, "entity_ids[0]"),
    ("add_thread", {"title": "t\ud800"}, "title"),
    ("add_thread", {"messages": [{"role": "user", "content": "hi \ud800"}]}, "messages[0].content"),
    ("upsert_concept", {"name": "n\ud800", "kind": "topic"}, "name"),
    ("upsert_concept", {"name": "n", "description": "\ud800"}, "description"),
    ("upsert_episode", {"events": "e", "summary": "s\ud800"}, "summary"),
    ("upsert_episode", {"events": "e", "tags": ["ok", "\ud800"]}, "tags[1]"),
    ("upsert_episode", {"events": "e", "qualities": {"q\udc00": 1}}, "qualities"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "where"), SURROGATE_WRITES, ids=lambda v: str(v)[:30]
)
def test_lone_surrogates_in_arguments_are_invalid_argument(
    door: Door, tool: str, arguments: dict[str, Any], where: str
) -> None:
    error = tool_error(door, tool, arguments)
    assert error["code"] == "invalid_argument" and error["hint"], error
    assert "surrogate" in error["message"] and where in error["message"], error


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_every_argument_of_every_tool_rejects_lone_surrogates(door: Door, tool: str) -> None:
    spec = get_tool(tool)
    assert spec is not None
    for prop in spec.input_model.model_json_schema()["properties"]:
        for value in ("x\ud800", ["\udfff"], {"\udc00": [1]}):
            error = tool_error(door, tool, {prop: value})
            assert error["code"] == "invalid_argument", (prop, value, error)
            assert "surrogate" in error["message"] and prop in error["message"], (prop, error)


def test_deep_arguments_within_the_transport_limit_are_tool_errors(door: Door) -> None:
    deep = json.loads(nest(40))
    for tool, arguments in (
        ("add_episode", {"content": "x", "metadata": deep}),
        ("upsert_episode", {"events": "e", "qualities": deep}),
        ("add_episode", {"content": "x", "entity_ids": json.loads("[" * 40 + "]" * 40)}),
    ):
        error = tool_error(door, tool, arguments)
        assert error["code"] == "invalid_argument", error


def test_surrogate_pairs_are_characters_and_stored(door: Door) -> None:
    body = call_body("add_episode", '{"content":"smile \\ud83d\\ude00"}')
    reply = door.post(body)
    status, answer = reply.status, strict_json(reply.body)
    assert status == 200 and answer["result"]["isError"] is False, answer
    got = door.post(
        call_body("get_episode", json.dumps({"id": answer["result"]["structuredContent"]["id"]}))
    )
    assert strict_json(got.body)["result"]["structuredContent"]["content"] == "smile \U0001f600"


def test_lambda_door_never_raises(lambda_door: Door) -> None:
    handler = import_handler(handler_of(FUNCTIONS[MCP]))
    # a body the runtime handed over as text with a raw lone surrogate in it
    event = apigw_event(b"{}", claims=ALICE)
    event["body"] = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"\ud800"}}'
    assert strict_json(invoke(handler, event).body)["error"]["code"] == -32700
    # a header echoed in an error (API Gateway hands headers over as text, unvalidated)
    event = apigw_event(REQUEST.encode(), claims=ALICE, headers={"mcp-protocol-version": "9\udfff"})
    reply = invoke(handler, event)
    assert reply.status == 400 and strict_json(reply.body)["error"]["code"] == -32022
    # a malformed event (not what API Gateway sends): an error response, not an exception
    for broken in (
        {"headers": ["not", "a", "dict"]},
        {"requestContext": "x"},
        {"body": 5, "isBase64Encoded": True},
    ):
        reply = invoke(handler, {**apigw_event(b"{}", claims=ALICE), **broken})
        assert strict_json(reply.body)["error"]["code"] in (-32600, -32603), reply
    encoded = apigw_event(b"", claims=ALICE)
    encoded.update(body=base64.b64encode(b"[" * 5000).decode(), isBase64Encoded=True)
    assert strict_json(invoke(handler, encoded).body)["error"]["code"] == -32700


def test_a_transport_bug_is_a_json_rpc_internal_error(
    lambda_door: Door, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlake.mcp.http import McpHttpApp

    def broken(self: Any, req: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(McpHttpApp, "exchange", broken)
    reply = lambda_door.post(REQUEST.encode())
    assert reply.status == 500 and strict_json(reply.body)["error"]["code"] == -32603
    monkeypatch.undo()


def test_a_telemetry_failure_after_the_call_keeps_its_answer(
    lambda_door: Door, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the call has run (a write may have committed): the client must get its result, or it
    # retries and stores the episode twice
    monkeypatch.setattr("functions.mcp.app.metrics.add_metric", lambda **kw: 1 / 0)
    reply = lambda_door.post(REQUEST.encode())
    assert reply.status == 200 and "result" in strict_json(reply.body)
