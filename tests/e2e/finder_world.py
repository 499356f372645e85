"""A small, fully known world of episodes, threads, concepts, relationships and audit records,
written through /mcp, for the finder filter tests (tests/e2e/test_finder_filters.py).

Every filter of every finder has a plain-Python reference here: `World` keeps what was
written, so a test can compute the expected result of any filter combination without asking
the server."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from mcp.client import Client

from .mcp_helpers import call

DAY0 = datetime(2024, 1, 1, 10, 0, tzinfo=UTC)
REL_PLAN = [  # (from index, to index, type, strength); every follows/causes chain is acyclic
    *(
        (
            i,
            i + 1,
            ("follows", "causes", "related_to", "part_of")[i % 4],
            (1.0, 0.8, 0.5, 0.3)[i % 4],
        )
        for i in range(11)
    ),
    (0, 5, "related_to", 0.9),
    (3, 0, "contradicts", 0.6),
    (2, 7, "refines", 0.4),
    (9, 4, "related_to", 0.7),
]


@dataclass
class Ep:
    id: str
    context: str | None
    platform: str | None
    tags: list[str]
    thread_id: str | None
    concept_ids: list[str]
    start: datetime
    end: datetime
    parquet: bool  # its events mention "parquet"


@dataclass
class Concept:
    id: str
    name: str
    kind: str
    description: str | None
    parent_id: str | None


@dataclass
class Rel:
    id: str
    from_id: str
    to_id: str
    type: str
    strength: float


@dataclass
class World:
    episodes: dict[str, Ep] = field(default_factory=dict)
    concepts: dict[str, Concept] = field(default_factory=dict)
    threads: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # id: (ctx, status)
    relationships: dict[str, Rel] = field(default_factory=dict)  # live ones
    audit: list[dict[str, Any]] = field(default_factory=list)  # oldest first
    deleted_episode: str = ""
    removed: list[str] = field(default_factory=list)
    cascaded: list[str] = field(default_factory=list)

    def episode_order(self) -> list[Ep]:
        """list_episodes' and find_episodes' order: newest first by start, then id."""
        return sorted(self.episodes.values(), key=lambda e: (e.start, e.id), reverse=True)


async def ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    out = await call(client, tool, args)
    assert not out["is_error"], (tool, args, out)
    return out


async def build_world(client: Client) -> World:
    w = World()
    # threads: every third in a context; some claimed, some completed
    for k in range(8):
        ctx = ("ctx-a", "ctx-b", None)[k % 3]
        args: dict[str, Any] = {"messages": [{"role": "user", "content": f"thread {k}"}]}
        if ctx:
            args["context"] = ctx
        tid = (await ok(client, "add_thread", args))["id"]
        status = "pending"
        if k % 4 in (1, 2):
            await ok(client, "mark_thread_status", {"id": tid, "status": "processing"})
            status = "processing"
        if k % 4 == 2:
            await ok(client, "mark_thread_status", {"id": tid, "status": "completed"})
            status = "completed"
        w.threads[tid] = (ctx, status)
    thread_ids = list(w.threads)
    # concepts: two roots, the rest under them or top-level; two share the name "Bob"
    names = ["Storage", "Teamwork", "Parquet", "Arrow", "DuckDB", "Alice", "Bob", "bob",
             "Paris", "parsing", "Zeta", "alpha"]  # fmt: skip
    for i, name in enumerate(names):
        kind = ("technology", "person", "concept")[i % 3]
        parent = None if i < 2 else (list(w.concepts)[i % 2] if i % 3 else None)
        desc = "columnar parquet files" if i % 4 == 1 else (None if i % 4 == 2 else "plain")
        args = {"name": name, "kind": kind}
        if desc is not None:
            args["description"] = desc
        if parent:
            args["parent_id"] = parent
        cid = (await ok(client, "upsert_concept", args))["concept"]["id"]
        w.concepts[cid] = Concept(cid, name, kind, desc, parent)
    concept_ids = list(w.concepts)
    # episodes: contexts, platforms, tags, times (two share a start), threads, concepts
    for i in range(13):
        start = DAY0 + timedelta(days=i - (1 if i == 7 else 0))
        end = start + timedelta(days=2) if i % 3 == 0 else start
        ep = Ep(
            id="",
            context=("ctx-a", "ctx-b", None)[i % 3],
            platform=None if i % 5 == 4 else ("claude" if i % 2 == 0 else "chatgpt"),
            tags=[[], ["x"], ["x", "y"], ["y", "z"]][i % 4],
            thread_id=thread_ids[i] if i < 4 else None,
            concept_ids=[c for k, c in enumerate(concept_ids) if (i + k) % 4 == 0],
            start=start,
            end=end,
            parquet=i % 3 == 1,
        )
        events = f"## 10:00 memlake note number {i}"
        events += " about parquet files" if ep.parquet else ""
        args = {"events": events, "started_at": start.isoformat(), "concept_ids": ep.concept_ids}
        if end != start:
            args["ended_at"] = end.isoformat()
        for key in ("context", "platform"):
            if getattr(ep, key) is not None:
                args[key] = getattr(ep, key)
        if ep.tags:
            args["tags"] = ep.tags
        if ep.thread_id:
            args["source_thread_id"] = ep.thread_id
        ep.id = (await ok(client, "upsert_episode", args))["id"]
        w.episodes[ep.id] = ep
    ids = list(w.episodes)
    # relationships, two removals, and a deleted episode (index 12) whose two cascade
    plan = [*REL_PLAN, (12, 5, "follows", 0.7), (2, 12, "causes", 0.9)]
    for a, b, kind, strength in plan:
        args = {"from_episode_id": ids[a], "to_episode_id": ids[b], "relationship_type": kind,
                "strength": strength}  # fmt: skip
        rid = (await ok(client, "add_episode_relationship", args))["relationship_id"]
        w.relationships[rid] = Rel(rid, ids[a], ids[b], kind, strength)
        w.audit.append(_audit("add_relationship", w.relationships[rid]))
    for rid in list(w.relationships)[2:4]:
        await ok(client, "remove_episode_relationship", {"relationship_id": rid})
        w.audit.append(_audit("remove_relationship", w.relationships.pop(rid)))
        w.removed.append(rid)
    w.deleted_episode = ids[12]
    await ok(client, "delete_episode", {"id": ids[12]})
    del w.episodes[ids[12]]
    for rid, rel in list(w.relationships.items()):
        if w.deleted_episode in (rel.from_id, rel.to_id):
            w.audit.append(_audit("cascade_delete", w.relationships.pop(rid)))
            w.cascaded.append(rid)
    return w


def _audit(action: str, rel: Rel) -> dict[str, Any]:
    return {"action": action, "relationship_id": rel.id, "from": rel.from_id, "to": rel.to_id}
