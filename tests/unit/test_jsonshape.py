"""Depth and lone-surrogate checks that cannot overflow the stack, and the encoder that cannot
fail on text: the pieces under the hostile-transport table (tests/integration/
test_transport_hostile.py), here also for the per-tool Lambda door, which has no transport."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from memlake.jsonshape import exceeds_depth, lone_surrogate
from memlake.mcp.dispatch import call_tool
from memlake.mcp.wire import BadMessage, dumps, parse_body
from memlake.models import check_metadata


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = {"a": value} if i % 2 else [value]
    return value


@pytest.mark.parametrize(
    ("value", "limit", "over"),
    [
        (1, 0, False),
        ({}, 0, True),
        ({}, 1, False),
        ({"a": [1, {"b": 2}]}, 3, False),
        ({"a": [1, {"b": {}}]}, 3, True),
        (nested(5), 5, False),
        (nested(6), 5, True),
        (nested(200_000), 64, True),
    ],
)
def test_exceeds_depth(value: Any, limit: int, over: bool) -> None:
    assert exceeds_depth(value, limit) is over


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ("fine \U0001f600", None),
        ({"k": ["a", "b"]}, None),
        ("x\ud800", "value: has a lone UTF-16 surrogate (\\ud800) at character 1"),
        ({"content": "ok", "meta": {"k": ["a", "\udfff"]}}, "meta.k[1]: has"),
        ({"meta": {"\udc00key": 1}}, "meta: key '\\udc00key' has"),
        ({"a": "\ud800", "b": "\ud800"}, "a: has"),  # the first one, in document order
        (nested(100_000, "\ud83d"), ": has a lone UTF-16 surrogate (\\ud83d)"),
    ],
)
def test_lone_surrogate_names_the_place(value: Any, where: str | None) -> None:
    found = lone_surrogate(value)
    if where is None:
        assert found is None
    else:
        assert found is not None and where in found, found
        found.encode("utf-8")  # the description itself is printable and encodable


@pytest.mark.parametrize("depth", [6, 500, 5_000, 200_000])
def test_metadata_depth_is_checked_without_recursion(depth: int) -> None:
    # issue 10 defect 4: 500 levels overflowed the recursive check before the 5-level limit
    with pytest.raises(ValueError, match="deeper than 5 levels"):
        check_metadata({"m": nested(depth)})
    assert check_metadata({"a": {"b": {"c": {"d": {"e": 1}}}}}) is not None


@pytest.mark.parametrize(
    ("tool", "arguments", "expect"),
    [
        ("add_episode", {"content": "x", "metadata": {"m": nested(500)}}, "deeper than 5"),
        ("add_episode", {"content": "x", "metadata": {"m": nested(100_000)}}, "deeper than 5"),
        ("upsert_episode", {"events": "e", "qualities": {"q": nested(5_000)}}, "deeper than 5"),
        ("add_episode", {"content": "x", "entity_ids": nested(100_000)}, "entity_ids"),
        ("add_episode", {"content": "a\ud800"}, "content: has a lone UTF-16 surrogate"),
    ],
)
def test_per_tool_door_arguments(tool: str, arguments: dict[str, Any], expect: str) -> None:
    """call_tool without a transport in front: what the per-tool Lambdas run."""
    outcome = call_tool({"name": tool, "arguments": arguments}, SimpleNamespace(request_id="r"))  # type: ignore[arg-type]
    assert outcome.error is not None and outcome.error.code == "invalid_argument", outcome
    assert expect in outcome.error.message, outcome


def test_dumps_never_fails_on_text() -> None:
    body = dumps({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "bad \ud800"}})
    assert json.loads(body.decode("utf-8"))["error"]["message"] == "bad \ufffd"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"\xef\xbb\xbf{}", None),  # a BOM is tolerated
        (b"{} \xff", "not valid UTF-8 (byte 3)"),
        (b'{"a":NaN}', "NaN is not JSON"),
        (b"[Infinity]", "Infinity is not JSON"),
        (b"[" * 65 + b"]" * 65, "deeper than 64 levels"),
        (b"[" * 64 + b"]" * 64, None),
        (b'{"a":' * 1000 + b"1" + b"}" * 1000, "deeper than 64 levels"),
    ],
)
def test_parse_body(body: bytes, reason: str | None) -> None:
    if reason is None:
        parse_body(body)
        return
    with pytest.raises(BadMessage, match=reason.replace("(", r"\(").replace(")", r"\)")):
        parse_body(body)
