"""The episode tools end to end through /mcp with the official client, on both lakes."""

from __future__ import annotations

import pytest

from .conftest import TOKENS
from .mcp_helpers import call, connect, run


def test_tools_are_listed_with_schemas_and_annotations(mcp_url: str) -> None:
    async def scenario() -> None:
        async with connect(mcp_url, TOKENS["alpha"]) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {"add_episode", "get_episode", "delete_episode", "list_episodes"} <= set(tools)
            for tool in tools.values():
                assert tool.input_schema["type"] == "object"
                assert tool.output_schema and tool.output_schema["type"] == "object"
                assert tool.annotations is not None
            assert tools["get_episode"].annotations.read_only_hint is True
            assert tools["delete_episode"].annotations.destructive_hint is True
            assert tools["delete_episode"].annotations.idempotent_hint is True
            assert tools["add_episode"].annotations.read_only_hint is False

    run(scenario())


def test_add_get_list_delete_round_trip(mcp_url: str) -> None:
    async def scenario() -> None:
        async with connect(mcp_url, TOKENS["alpha"]) as client:
            long_text = "We chose Parquet for the lake. " * 40
            added = await call(
                client,
                "add_episode",
                {
                    "content": long_text,
                    "summary": "storage decision",
                    "metadata": {"session_id": "s-1", "participants": ["ana", "bo"]},
                    "context": "roundtrip",
                    "started_at": "2026-03-01T09:00:00",
                    "ended_at": "2026-03-01T11:45:00+01:00",
                },
            )
            assert not added["is_error"]
            assert added["content_truncated"] is True and len(added["content"]) <= 501
            assert added["started_at"] == "2026-03-01T09:00:00.000000Z"
            assert added["ended_at"] == "2026-03-01T10:45:00.000000Z"  # converted to UTC
            assert added["linked_entities"] == 0

            got = await call(client, "get_episode", {"id": "episode:" + added["id"]})
            assert got["content"] == long_text  # full content on get
            assert got["metadata"] == {"session_id": "s-1", "participants": ["ana", "bo"]}
            assert got["context"] == "roundtrip"

            second = await call(client, "add_episode", {"content": "later", "context": "roundtrip"})
            assert second["id"] > added["id"]  # time-sortable ids

            listed = await call(client, "list_episodes", {"context": "roundtrip"})
            assert [e["id"] for e in listed["episodes"]] == [second["id"], added["id"]]

            deleted = await call(client, "delete_episode", {"id": added["id"]})
            assert deleted["deleted"] == 1
            again = await call(client, "delete_episode", {"id": added["id"]})
            assert again["deleted"] == 0 and not again["is_error"]
            missing = await call(client, "get_episode", {"id": added["id"]})
            assert missing["is_error"] and missing["error"]["code"] == "not_found"
            listed = await call(client, "list_episodes", {"context": "roundtrip"})
            assert [e["id"] for e in listed["episodes"]] == [second["id"]]

    run(scenario())


def test_list_pages_with_cursor_and_time_filters(mcp_url: str) -> None:
    async def scenario() -> None:
        async with connect(mcp_url, TOKENS["alpha"]) as client:
            ids = []
            for day in range(1, 8):
                ep = await call(
                    client,
                    "add_episode",
                    {"content": f"day {day}", "context": "paging", "started_at": f"2026-05-0{day}"},
                )
                ids.append(ep["id"])
            seen, cursor = [], None
            while True:
                args = {"context": "paging", "limit": 3, **({"cursor": cursor} if cursor else {})}
                page = await call(client, "list_episodes", args)
                seen += [e["content"] for e in page["episodes"]]
                cursor = page.get("next_cursor")
                if cursor is None:
                    break
            assert seen == [f"day {d}" for d in range(7, 0, -1)]

            window = await call(
                client,
                "list_episodes",
                {
                    "context": "paging",
                    "time_start": "2026-05-03",
                    "time_end": "2026-05-05T00:00:00Z",
                },
            )
            assert [e["content"] for e in window["episodes"]] == ["day 5", "day 4", "day 3"]
            bad = await call(
                client,
                "list_episodes",
                {"context": "paging", "time_start": "2026-05-05", "time_end": "2026-05-01"},
            )
            assert bad["is_error"] and "time_start is after time_end" in bad["error"]["message"]
            wrong_cursor = await call(
                client, "list_episodes", {"context": "other", "cursor": page_cursor_of(ids)}
            )
            assert wrong_cursor["is_error"]

    run(scenario())


def page_cursor_of(ids: list[str]) -> str:
    return "bm90LWEtY3Vyc29y"  # base64 of "not-a-cursor"


def test_tenants_are_isolated(mcp_url: str) -> None:
    async def scenario() -> None:
        async with connect(mcp_url, TOKENS["alpha"]) as alpha:
            secret = await call(alpha, "add_episode", {"content": "alpha's secret plan"})
        async with connect(mcp_url, TOKENS["beta"]) as beta:
            got = await call(beta, "get_episode", {"id": secret["id"]})
            assert got["is_error"] and got["error"]["code"] == "not_found"
            gone = await call(beta, "delete_episode", {"id": secret["id"]})
            assert gone["deleted"] == 0
            listed = await call(beta, "list_episodes", {"limit": 100})
            assert secret["id"] not in [e["id"] for e in listed["episodes"]]
        async with connect(mcp_url, TOKENS["alpha"]) as alpha:
            still = await call(alpha, "get_episode", {"id": secret["id"]})
            assert still["content"] == "alpha's secret plan"

    run(scenario())


@pytest.mark.filterwarnings("ignore:ping is removed")
def test_legacy_handshake_client_works_too(mcp_url: str) -> None:
    async def scenario() -> None:
        async with connect(mcp_url, TOKENS["alpha"], mode="legacy") as client:
            added = await call(client, "add_episode", {"content": "via initialize"})
            got = await call(client, "get_episode", {"id": added["id"]})
            assert got["content"] == "via initialize"
            await client.send_ping()

    run(scenario())
