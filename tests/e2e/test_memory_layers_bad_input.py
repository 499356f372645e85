"""Memory-layer tools answer bad input and forbidden state changes with a clear tool error and
leave every stored object as it was, on both lakes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import API_KEYS, TOKENS, ServerUnderTest
from .mcp_helpers import assert_tool_error_changes_nothing, call, connect, run, serve_subprocess


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerUnderTest]:
    """conftest's local server with background compaction off: compaction is the only other
    writer, and these tests compare every stored object before and after a refused call."""
    data = tmp_path_factory.mktemp("lake")

    def objects() -> dict[str, int]:
        return {str(p.relative_to(data)): p.stat().st_size for p in data.rglob("*") if p.is_file()}

    env = {"MEMLAKE_API_KEYS": API_KEYS, "MEMLAKE_COMPACT_MIN_SEGMENTS": "1000000"}
    with serve_subprocess(data, env) as url:
        yield ServerUnderTest(url, objects)


MSG = {"role": "user", "content": "hi"}
BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("add_thread", {"messages": "hello"}, "messages"),
    ("add_thread", {"messages": [{"role": "robot", "content": "x"}]}, "role"),
    ("add_thread", {"messages": [{"role": "user", "content": " \n"}]}, "content is empty"),
    ("add_thread", {"messages": [{"role": "user", "content": "x" * 70_000}]}, "the limit is"),
    ("add_thread", {"messages": [MSG] * 101}, "messages"),
    ("add_thread", {"messages": [{**MSG, "at": "teatime"}]}, "ISO 8601"),
    ("add_thread", {"title": "two\nlines"}, "title"),
    ("add_thread", {"title": "t" * 301}, "title"),
    ("add_thread", {"context": "a\tb"}, "context"),
    ("add_thread", {"priority": 1}, "unknown argument"),
    ("append_thread_messages", {"thread_id": "../x", "messages": [MSG]}, "not a valid id"),
    ("append_thread_messages", {"thread_id": "abc", "messages": []}, "messages"),
    ("append_thread_messages", {"messages": [MSG]}, "thread_id"),
    ("get_thread", {"id": "a/b"}, "not a valid id"),
    ("get_thread", {"id": "abc", "offset": -1}, "offset"),
    ("get_thread", {"id": "abc", "limit": 501}, "limit"),
    ("get_thread", {"id": "nothere"}, "not found"),
    ("get_pending_threads", {"limit": 0}, "limit"),
    ("get_pending_threads", {"cursor": "%%%"}, "cursor"),
    ("mark_thread_status", {"id": "abc", "status": "done"}, "status"),
    ("mark_thread_status", {"id": "a b", "status": "processing"}, "not a valid id"),
    ("mark_thread_status", {"id": "nothere", "status": "processing"}, "not found"),
    ("upsert_episode", {"events": ""}, "events"),
    ("upsert_episode", {"events": "   "}, "events is empty"),
    ("upsert_episode", {"source_title": "no events"}, "events is required"),
    ("upsert_episode", {"events": "x", "timezone": "Mars/Base"}, "timezone"),
    ("upsert_episode", {"events": "x", "input_modalities": ["Smell O Vision"]}, "input_modal"),
    ("upsert_episode", {"events": "x", "tags": [f"t{i}" for i in range(33)]}, "tags"),
    (
        "upsert_episode",
        {"events": "x", "qualities": {"a": {"b": {"c": {"d": {"e": {}}}}}}},
        "deeper",
    ),
    ("upsert_episode", {"events": "x", "qualities": [1]}, "qualities"),
    (
        "upsert_episode",
        {"events": "x", "started_at": "2026-02-02", "ended_at": "2026-01-01"},
        "after",
    ),
    ("upsert_episode", {"events": "x", "platform": "a\nb"}, "platform"),
    ("upsert_episode", {"events": "x", "id": "../../etc"}, "not a valid id"),
    ("upsert_episode", {"events": "x", "source_thread_id": "x/y"}, "not a valid id"),
    ("upsert_episode", {"events": "x", "concept_ids": ["c"] * 101}, "concept_ids"),
    ("upsert_episode", {"events": "x" * (256 * 1024 + 1)}, "the limit is"),
    ("upsert_episode", {"events": "x", "source_thread_id": "nothere"}, "not found"),
    ("upsert_episode", {"events": "x", "concept_ids": ["nothere"]}, "not found"),
    ("find_episodes", {"limit": 0}, "limit"),
    ("find_episodes", {"limit": 101}, "limit"),
    ("find_episodes", {"query": "x", "limit": 60}, "at most 50"),
    ("find_episodes", {"query": "x", "cursor": "abc"}, "listings only"),
    ("find_episodes", {"query": ""}, "query"),
    ("find_episodes", {"tags": ["t"] * 33}, "tags"),
    ("find_episodes", {"time_start": "2026-13-45"}, "ISO 8601"),
    ("find_episodes", {"cursor": "bm90LWEtY3Vyc29y"}, "cursor"),
    ("get_episode_history", {"id": "abc", "limit": 0}, "limit"),
    ("get_episode_history", {"id": "abc", "from_version": 0}, "from_version"),
    ("get_episode_history", {"id": "nothere"}, "not found"),
    ("upsert_concept", {"name": "  "}, "name"),
    ("upsert_concept", {"name": "n" * 201}, "name"),
    ("upsert_concept", {"name": "x", "parent_id": "../p"}, "not a valid id"),
    ("upsert_concept", {"name": "x", "description": "d" * 4001}, "description"),
    ("upsert_concept", {"name": "x", "parent_id": "nothere"}, "not found"),
    ("upsert_concept", {"kind": "person"}, "name is required"),
    ("get_concept", {"id": "abc", "episode_limit": 201}, "episode_limit"),
    ("get_concept", {"id": "nothere"}, "not found"),
    ("find_concepts", {"limit": 0}, "limit"),
    ("find_concepts", {"cursor": "###"}, "cursor"),
    ("find_concepts", {"query": "q" * 201}, "query"),
    ("delete_concept", {"id": "a/b"}, "not a valid id"),
    ("link_episode_to_concept", {"episode_id": "e", "concept_id": "c", "confidence": 2}, "conf"),
    ("link_episode_to_concept", {"episode_id": "e", "concept_id": "c", "position": -1}, "posi"),
    ("link_episode_to_concept", {"episode_id": "e"}, "concept_id"),
    ("link_episode_to_concept", {"episode_id": "nothere", "concept_id": "c"}, "not found"),
    ("unlink_episode_from_concept", {"episode_id": "../e", "concept_id": "c"}, "not a valid"),
]


@pytest.mark.parametrize(("tool", "args", "expect"), BAD_CALLS, ids=lambda v: str(v)[:40])
def test_bad_arguments_are_tool_errors(
    server: ServerUnderTest, tool: str, args: dict[str, Any], expect: str
) -> None:
    assert_tool_error_changes_nothing(server, TOKENS["alpha"], tool, args, expect)


async def _ok(client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    out = await call(client, tool, args)
    assert not out["is_error"], (tool, out)
    return out


async def _refused(
    server: ServerUnderTest, client: Any, tool: str, args: dict[str, Any], code: str, text: str
) -> dict[str, Any]:
    before = server.objects()
    out = await call(client, tool, args)
    assert out["is_error"] and out["error"]["code"] == code, (tool, out)
    assert text in out["error"]["message"], out["error"]
    assert out["error"].get("hint"), out["error"]
    assert server.objects() == before, (tool, args)
    return out


def test_forbidden_state_changes_change_nothing(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with connect(server.url, TOKENS["beta"]) as beta:
            beta_concept = (await _ok(beta, "upsert_concept", {"name": "beta's"}))["concept"]["id"]
            beta_episode = (await _ok(beta, "upsert_episode", {"events": "beta's"}))["id"]
            beta_thread = (await _ok(beta, "add_thread", {}))["id"]
        async with connect(server.url, TOKENS["alpha"]) as c:
            tid = (await _ok(c, "add_thread", {"messages": [MSG]}))["id"]
            # illegal status moves, listing what is allowed
            out = await _refused(
                server,
                c,
                "mark_thread_status",
                {"id": tid, "status": "completed"},
                "conflict",
                "from pending to completed",
            )
            assert "pending->processing (claim)" in out["error"]["hint"]
            await _ok(c, "mark_thread_status", {"id": tid, "status": "processing"})
            await _refused(
                server,
                c,
                "mark_thread_status",
                {"id": tid, "status": "processing"},
                "conflict",
                "already processing",
            )
            # a thread yields one episode
            eid = (await _ok(c, "upsert_episode", {"events": "e1", "source_thread_id": tid}))["id"]
            await _refused(
                server,
                c,
                "upsert_episode",
                {"events": "e2", "source_thread_id": tid},
                "conflict",
                "already has episode",
            )
            tid2 = (await _ok(c, "add_thread", {}))["id"]
            await _refused(
                server,
                c,
                "upsert_episode",
                {"id": eid, "source_thread_id": tid2},
                "conflict",
                "fixed",
            )
            # links to missing ids and to another tenant's ids
            cid = (await _ok(c, "upsert_concept", {"name": "alpha's"}))["concept"]["id"]
            for episode_id, concept_id in [
                (eid, "nothere"),
                ("nothere", cid),
                (eid, beta_concept),
                (beta_episode, cid),
            ]:
                args = {"episode_id": episode_id, "concept_id": concept_id}
                await _refused(server, c, "link_episode_to_concept", args, "not_found", "not found")
                await _refused(
                    server, c, "unlink_episode_from_concept", args, "not_found", "not found"
                )
            await _refused(
                server,
                c,
                "upsert_episode",
                {"id": eid, "concept_ids": [cid, beta_concept]},
                "not_found",
                beta_concept,
            )
            await _refused(
                server,
                c,
                "upsert_episode",
                {"events": "x", "source_thread_id": beta_thread},
                "not_found",
                "not found",
            )
            # hierarchy: cycles and deleting a parent
            child = await _ok(c, "upsert_concept", {"name": "child", "parent_id": cid})
            child_id = child["concept"]["id"]
            await _refused(
                server,
                c,
                "upsert_concept",
                {"id": cid, "parent_id": child_id},
                "conflict",
                "cycle",
            )
            await _refused(server, c, "delete_concept", {"id": cid}, "conflict", "child")
            # the episode and links are as they were
            got = await _ok(c, "get_episode", {"id": eid})
            assert "concept_ids" not in got and got["revision"] == 1

    run(scenario())
