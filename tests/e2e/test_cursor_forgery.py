"""Forged, edited, foreign and malformed page cursors are invalid_argument tool errors with a
hint (never internal_error), through /mcp on the local lake and on moto S3.

Each case starts from a real next_cursor and edits the decoded JSON the way an attacker or a
confused model would: positions of the wrong types, another position of the right types,
another tenant's cursor, another listing's cursor, garbage, deep nesting."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest
from mcp.client import Client

from .conftest import TOKENS, ServerUnderTest
from .finder_world import ok
from .mcp_helpers import call, connect, run

WRONG_TYPES: list[Any] = [
    ["a", 1],
    [1.5, None],
    [{"x": 1}, []],
    [True, "x"],
    [2**70, "x"],
    ["\ud800", "\udfff"],
    [1, "x", 3],
    [],
    [None],
    [5],
    ["../../x"],
    "not a list",
    None,
]
GARBAGE = ["%%%", "x", "e30", "W10", "WyJhIl0", "[" * 1500, "=" * 10]


def _b64(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _decoded(cursor: str) -> list[Any]:
    value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    assert isinstance(value, list)
    return value


def _with_position(cursor: str, position: Any) -> str:
    """The cursor with its position (first element) replaced, everything else kept."""
    return _b64([position, *_decoded(cursor)[1:]])


async def _seed(client: Client) -> dict[str, dict[str, Any]]:
    """Three rows for each paged listing of one tenant (unique context and kind per call)."""
    tag = uuid.uuid4().hex[:8]
    ctx, kind = f"cur-{tag}", f"kind-{tag}"
    ids = []
    for i in range(3):
        ids.append((await ok(client, "upsert_episode", {"events": f"e {i}", "context": ctx}))["id"])
        await ok(
            client, "add_thread", {"context": ctx, "messages": [{"role": "user", "content": "m"}]}
        )
        await ok(client, "upsert_concept", {"name": f"c{i}", "kind": kind})
    for other in ids[1:]:
        for rel_type in ("related_to", "contradicts"):
            rel = {"from_episode_id": ids[0], "to_episode_id": other, "relationship_type": rel_type}
            await ok(client, "add_episode_relationship", rel)
    return {
        "list_episodes": {"context": ctx},
        "find_episodes": {"context": ctx},
        "get_pending_threads": {"context": ctx},
        "find_concepts": {"kind": kind},
        "get_audit_log": {"episode_id": ids[0]},
    }


async def _cursor(client: Client, tool: str, args: dict[str, Any]) -> str:
    page = await ok(client, tool, {**args, "limit": 2})
    assert isinstance(page.get("next_cursor"), str), page
    return page.get("next_cursor")  # type: ignore[no-any-return]


async def _refused(client: Client, tool: str, args: dict[str, Any], cursor: str) -> dict[str, Any]:
    out = await call(client, tool, {**args, "limit": 2, "cursor": cursor})
    assert out["is_error"], (tool, cursor, out)
    assert out["error"]["code"] == "invalid_argument", (tool, cursor, out)
    assert "cursor" in out["error"]["message"] and out["error"]["hint"], out
    return out


@pytest.fixture
def listings(server: ServerUnderTest) -> dict[str, dict[str, Any]]:
    async def scenario() -> dict[str, dict[str, Any]]:
        async with connect(server.url, TOKENS["beta"]) as client:
            return await _seed(client)

    return run(scenario())  # type: ignore[no-any-return]


def test_forged_and_malformed_cursors_are_invalid_argument(
    server: ServerUnderTest, listings: dict[str, dict[str, Any]]
) -> None:
    async def scenario() -> int:
        cases = 0
        async with connect(server.url, TOKENS["beta"]) as client:
            for tool, args in listings.items():
                real = await _cursor(client, tool, args)
                second = await ok(client, tool, {**args, "limit": 2, "cursor": real})
                assert second["count"] >= 1 and not second["is_error"], second
                forged = [_with_position(real, p) for p in WRONG_TYPES]
                forged.append(_with_position(real, [0, "0"] if tool != "get_audit_log" else ["0"]))
                forged += [real[:-2], real + "AA", _b64(_decoded(real)[:1]), *GARBAGE]
                for cursor in forged:
                    await _refused(client, tool, args, cursor)
                    cases += 1
        return cases

    assert run(scenario()) > 100


def test_a_cursor_works_only_for_its_tenant_and_listing(
    server: ServerUnderTest, listings: dict[str, dict[str, Any]]
) -> None:
    async def scenario() -> None:
        async with (
            connect(server.url, TOKENS["beta"]) as beta,
            connect(server.url, TOKENS["alpha"]) as alpha,
        ):
            cursors = {tool: await _cursor(beta, tool, args) for tool, args in listings.items()}
            for tool, args in listings.items():
                out = await _refused(alpha, tool, args, cursors[tool])  # same filters, other tenant
                # the tenant is inside the MAC: another tenant's cursor does not verify at all
                assert out["error"]["message"].startswith("cursor is not valid"), out
            found = await _refused(
                beta, "find_episodes", listings["find_episodes"], cursors["list_episodes"]
            )
            assert found["error"]["message"].startswith("cursor belongs to another listing"), found
            other = {"context": "somewhere-else"}
            out = await _refused(beta, "list_episodes", other, cursors["list_episodes"])
            assert out["error"]["message"].startswith("cursor belongs to another listing"), out

    run(scenario())
