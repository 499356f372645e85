"""A realistic agent session that calls every tool once or more (compact-result checks).

`session(call)` drives it through any door: `call(tool, args)` returns the tool's result as a
dict. It yields (tool, args, result) for every call, so a test can walk all the JSON.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
Record = tuple[str, dict[str, Any], dict[str, Any]]


async def session(call: Call) -> list[Record]:
    """Every tool of the server, with the arguments an agent would pass; results in order."""
    out: list[Record] = []

    async def do(tool: str, **args: Any) -> dict[str, Any]:
        result = await call(tool, args)
        out.append((tool, args, result))
        return result

    concept = (await do("upsert_concept", name="Parquet", kind="technology"))["concept"]["id"]
    child = await do(
        "upsert_concept", name="Row groups", description="Parquet's unit of I/O", parent_id=concept
    )
    ep1 = (
        await do(
            "add_episode",
            content="We chose Parquet files on S3 for the lake. " * 20,
            context="memlake",
            entity_ids=[concept, "entity:missing"],
        )
    )["id"]
    ep2 = (await do("add_episode", content="Compaction merges small files into one."))["id"]
    thread = (
        await do(
            "add_thread",
            title="Design chat",
            messages=[{"role": "user", "content": "How do we store episodes?"}],
        )
    )["id"]
    await do(
        "append_thread_messages",
        thread_id=thread,
        messages=[{"role": "assistant", "content": "As Parquet rows in the lake."}],
    )
    await do("get_pending_threads")
    await do("mark_thread_status", id=thread, status="processing")
    ep3 = (
        await do(
            "upsert_episode",
            events="## 10:00 decided on Parquet\n## 10:05 wrote the lake",
            source_title="Storage design",
            tags=["design"],
            source_thread_id=thread,
            concept_ids=[concept],
        )
    )["id"]
    await do("upsert_episode", id=ep3, summary="Parquet on S3")
    await do("mark_thread_status", id=thread, status="completed")
    await do("get_thread", id=thread)
    await do("link_episode_to_concept", episode_id=ep1, concept_id=child["concept"]["id"])
    await do("unlink_episode_from_concept", episode_id=ep1, concept_id=child["concept"]["id"])
    await do("get_concept", id=concept)
    await do("find_concepts", query="parquet")
    await do("get_episode", id=ep1, include_entities=True)
    await do("get_episode", id=ep3)
    await do("get_episode_history", id=ep3)
    await do("list_episodes", limit=2)
    await do("find_episodes", query="parquet")
    await do("find_episodes", tags=["design"])
    await do("search_episodes", query="parquet lake")
    await do("search_episodes", query="parquet lake", content="passage")
    await do("search_episodes", query="parquet lake", content="none")
    await do("search_episodes", query="parquet", context="no-such-project")
    rel = (
        await do(
            "add_episode_relationship",
            from_episode_id=ep1,
            to_episode_id=ep3,
            relationship_type="follows",
        )
    )["relationship_id"]
    await do(
        "add_episode_relationship",
        from_episode_id=ep3,
        to_episode_id=ep2,
        relationship_type="causes",
        strength=0.5,
        metadata={"why": "compaction came from the design"},
    )
    await do("get_episode_relationships", episode_id=ep3)
    await do("find_related_episodes", episode_id=ep1)
    await do("check_relationship_exists", from_episode_id=ep1, to_episode_id=ep3)
    await do("check_relationship_exists", from_episode_id=ep2, to_episode_id=ep1)
    await do(
        "validate_no_cycles", from_episode_id=ep3, to_episode_id=ep1, relationship_type="follows"
    )
    await do("get_dependency_graph")
    await do("get_dependency_graph", format="mermaid")
    await do("get_topological_order")
    await do("remove_episode_relationship", relationship_id=rel)
    await do("get_audit_log")
    await do("delete_concept", id=child["concept"]["id"])
    await do("delete_episode", id=ep2)
    scratch = await do("add_thread", title="Scratch", messages=[{"role": "user", "content": "x"}])
    await do("delete_thread", id=scratch["id"])
    return out
