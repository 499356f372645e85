"""ADR-007 memory layers end to end through /mcp with the official client, on both lakes:
thread -> pending -> claim -> episode (source_thread_id) -> concepts linked -> completed."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from .conftest import TOKENS, ServerUnderTest
from .mcp_helpers import call, connect, run

LAYER_TOOLS = {
    "add_thread": (False, False),
    "append_thread_messages": (False, False),
    "get_thread": (True, False),
    "get_pending_threads": (True, False),
    "mark_thread_status": (False, False),
    "upsert_episode": (False, False),
    "find_episodes": (True, False),
    "get_episode_history": (True, False),
    "upsert_concept": (False, False),
    "get_concept": (True, False),
    "find_concepts": (True, False),
    "delete_concept": (False, True),
    "link_episode_to_concept": (False, False),
    "unlink_episode_from_concept": (False, True),
}


async def ok(client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    out = await call(client, tool, args)
    assert not out["is_error"], (tool, out)
    return out


def test_layer_tools_are_listed_with_schemas_and_annotations(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for name, (read_only, destructive) in LAYER_TOOLS.items():
                tool = tools[name]
                assert tool.input_schema["type"] == "object" and tool.output_schema
                assert tool.annotations.read_only_hint is read_only, name
                assert tool.annotations.destructive_hint is destructive, name

    run(scenario())


def test_adr007_workflow(server: ServerUnderTest) -> None:
    ctx = f"adr7-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as client:
            # 1. a raw conversation arrives and waits for processing
            thread = await ok(
                client,
                "add_thread",
                {
                    "title": "Choosing a storage format",
                    "context": ctx,
                    "messages": [
                        {"role": "user", "content": "Parquet or Avro for the lake?"},
                        {"role": "assistant", "content": "Parquet: columnar, zstd, DuckDB."},
                    ],
                },
            )
            tid = thread["id"]
            more = await ok(
                client,
                "append_thread_messages",
                {"thread_id": tid, "messages": [{"role": "user", "content": "Parquet it is."}]},
            )
            assert more["thread"]["message_count"] == 3
            pending = await ok(client, "get_pending_threads", {"context": ctx})
            assert [t["id"] for t in pending["threads"]] == [tid]

            # 2. an agent claims it; a second claim loses
            claim = await ok(client, "mark_thread_status", {"id": tid, "status": "processing"})
            assert claim["move"] == "claim" and claim["thread"]["claimed_by"]
            lost = await call(client, "mark_thread_status", {"id": tid, "status": "processing"})
            assert lost["is_error"] and lost["error"]["code"] == "conflict"
            assert "already processing" in lost["error"]["message"]
            assert (await ok(client, "get_pending_threads", {"context": ctx}))["threads"] == []
            body = await ok(client, "get_thread", {"id": tid})
            assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]

            # 3. concepts, then the episode derived from the thread
            tech = await ok(client, "upsert_concept", {"name": "Storage tech", "kind": "area"})
            parquet = await ok(
                client,
                "upsert_concept",
                {"name": "Parquet", "kind": "technology", "parent_id": tech["concept"]["id"]},
            )
            pid, tech_id = parquet["concept"]["id"], tech["concept"]["id"]
            ep = await ok(
                client,
                "upsert_episode",
                {
                    "events": "## 09:00\nCompared Parquet and Avro.\n## 09:05\nChose Parquet.",
                    "source_title": "Storage format decision",
                    "started_at": "2026-03-01T09:00:00Z",
                    "ended_at": "2026-03-01T09:05:00Z",
                    "timezone": "Europe/Berlin",
                    "platform": "claude",
                    "client": "claude-desktop",
                    "model": "claude-opus-4",
                    "voice_mode": False,
                    "input_modalities": ["text"],
                    "output_modalities": ["text"],
                    "qualities": {"confidence": "high"},
                    "tags": ["storage", "decision"],
                    "context": ctx,
                    "source_thread_id": tid,
                    "concept_ids": [pid],
                },
            )
            eid = ep["id"]
            assert ep["created"] and ep["concept_ids"] == [pid] and ep["source_thread_id"] == tid
            link = await ok(
                client,
                "link_episode_to_concept",
                {"episode_id": eid, "concept_id": tech_id, "position": 1, "confidence": 0.6},
            )
            assert link["concept_ids"] == [pid, tech_id] and link["episode_ids"] == [eid]

            # 4. done: the thread points at its episode, both link sides agree
            done = await ok(client, "mark_thread_status", {"id": tid, "status": "completed"})
            assert done["thread"]["episode_id"] == eid
            assert done["thread"]["processing_status"] == "completed"
            got = await ok(client, "get_episode", {"id": eid, "include_entities": True})
            assert [(e["id"], e["confidence"]) for e in got["entities"]] == [
                (pid, 1.0),
                (tech_id, 0.6),
            ]
            assert got["platform"] == "claude" and got["qualities"] == {"confidence": "high"}
            concept = await ok(client, "get_concept", {"id": pid})
            assert concept["episode_ids"] == [eid]
            assert [a["id"] for a in concept["ancestors"]] == [tech_id]
            assert concept["episodes"][0]["title"] == "Storage format decision"
            second = await call(
                client, "upsert_episode", {"events": "dup", "source_thread_id": tid}
            )
            assert second["is_error"] and second["error"]["code"] == "conflict"

            # 5. find it: by filters, and by meaning (hybrid search over title/events/tags)
            by_thread = await ok(client, "find_episodes", {"thread_id": tid})
            assert [e["id"] for e in by_thread["episodes"]] == [eid]
            by_filters = await ok(
                client,
                "find_episodes",
                {"context": ctx, "platform": "claude", "tags": ["decision"], "concept_id": pid},
            )
            assert [e["id"] for e in by_filters["episodes"]] == [eid]
            found = await ok(
                client,
                "find_episodes",
                {"query": "which columnar file format did we pick?", "context": ctx},
            )
            assert found["mode"] == "search" and found["episodes"][0]["id"] == eid
            assert 0 < found["episodes"][0]["score"] <= 1 and found["episodes"][0]["breakdown"]
            none = await ok(
                client, "find_episodes", {"query": "Parquet", "context": ctx, "platform": "x"}
            )
            assert none["episodes"] == []

            # 6. reprocess: update the episode; the earlier revision stays readable
            await ok(client, "mark_thread_status", {"id": tid, "status": "pending"})
            await ok(client, "mark_thread_status", {"id": tid, "status": "processing"})
            upd = await ok(client, "upsert_episode", {"id": eid, "events": "## 09:00 Parquet."})
            assert upd["revision"] == 2 and upd["concept_ids"] == [pid, tech_id]
            hist = await ok(client, "get_episode_history", {"id": eid, "full_content": True})
            assert [r["episode"]["revision"] for r in hist["revisions"]] == [2, 1]
            assert hist["revisions"][1]["episode"]["content"].startswith("## 09:00\nCompared")
            await ok(client, "mark_thread_status", {"id": tid, "status": "completed"})

            # 7. seed 000: add_episode links entity_ids with position and confidence
            added = await ok(
                client, "add_episode", {"content": "More on Parquet", "entity_ids": [pid, "nope"]}
            )
            assert added["linked_entities"] == 1
            assert [f["entity_id"] for f in added["failed_entity_ids"]] == ["nope"]

            # 8. deletes clean both sides
            await ok(client, "delete_episode", {"id": eid})
            assert (await ok(client, "get_thread", {"id": tid}))["thread"].get("episode_id") is None
            assert (await ok(client, "get_concept", {"id": pid}))["episode_ids"] == [added["id"]]
            gone = await ok(client, "delete_concept", {"id": pid})
            assert gone["deleted"] == 1 and gone["unlinked_episodes"] == 1
            after = await ok(client, "get_episode", {"id": added["id"]})
            assert "concept_ids" not in after

    run(scenario())


def test_parallel_clients_claim_each_thread_once(server: ServerUnderTest) -> None:
    ctx = f"claims-{uuid.uuid4().hex[:8]}"

    async def agent(n: int) -> list[str]:
        won: list[str] = []
        async with connect(server.url, TOKENS["alpha"]) as client:
            while True:
                page = await ok(client, "get_pending_threads", {"context": ctx, "limit": 100})
                if not page["threads"]:
                    return won
                threads = page["threads"]
                for t in threads[n % len(threads) :] + threads[: n % len(threads)]:
                    args = {"id": t["id"], "status": "processing"}
                    out = await call(client, "mark_thread_status", args)
                    if not out["is_error"]:
                        won.append(t["id"])
                    else:
                        assert out["error"]["code"] == "conflict", out

    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as client:
            ids = [
                (await ok(client, "add_thread", {"context": ctx, "title": f"t{i}"}))["id"]
                for i in range(8)
            ]
        results = await asyncio.gather(*(agent(n) for n in range(4)))
        claimed = [t for won in results for t in won]
        assert sorted(claimed) == sorted(ids)  # every thread claimed exactly once

    run(scenario())


def test_tenants_cannot_reach_each_others_layers(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with connect(server.url, TOKENS["beta"]) as beta:
            thread = await ok(beta, "add_thread", {"title": "beta only"})
            concept = await ok(beta, "upsert_concept", {"name": "beta concept"})
            ep = await ok(beta, "upsert_episode", {"events": "beta events"})
        async with connect(server.url, TOKENS["alpha"]) as alpha:
            cid = concept["concept"]["id"]
            for tool, args in [
                ("get_thread", {"id": thread["id"]}),
                ("mark_thread_status", {"id": thread["id"], "status": "processing"}),
                ("get_concept", {"id": cid}),
                ("get_episode_history", {"id": ep["id"]}),
                ("upsert_episode", {"events": "x", "source_thread_id": thread["id"]}),
                ("upsert_episode", {"events": "x", "concept_ids": [cid]}),
            ]:
                out = await call(alpha, tool, args)
                assert out["is_error"] and out["error"]["code"] == "not_found", (tool, out)
            mine = await ok(alpha, "find_concepts", {"query": "beta"})
            assert mine["concepts"] == []

    run(scenario())
