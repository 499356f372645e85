"""Compact results through /mcp with the official client, on both lakes (issue 11).

Every tool of a realistic session: no null, empty string or empty attribute anywhere (only
result lists may be empty), the text block is the structuredContent JSON (mcp_helpers.call),
and write tools return ids, times and counts. search_episodes: content full | passage | none,
the 65,536-character cap with truncated hits, and every hit's matched passage (offsets into
content, and its text where decision 1215 says).
"""

from __future__ import annotations

import json
import random
from typing import Any

from memlake.tools.search_episodes import MAX_RESULT_CHARS

from .conftest import TOKENS, ServerUnderTest
from .mcp_helpers import call, connect, run
from .session_world import session

#: Lists that are a tool's answer: [] says "none found" and is kept (decision 1111)
RESULT_LISTS = {
    "episodes",
    "threads",
    "concepts",
    "messages",
    "revisions",
    "relationships",
    "related_episodes",
    "ordered_episodes",
    "cycles",
    "records",
    "nodes",
    "edges",
    "episode_ids",  # get_concept's, beside its episodes
}
USER_JSON = {"metadata", "qualities", "details"}  # the caller's JSON, kept as given when set


def wasted(value: Any, path: str = "") -> list[str]:
    """Paths of nulls, empty strings and empty attributes in a tool result."""
    found: list[str] = []
    if value is None or value == "":
        return [path]
    if isinstance(value, dict):
        for key, sub in value.items():
            where = f"{path}.{key}"
            if key in USER_JSON:
                found += [where] if sub in (None, {}, "") else []
            elif sub == [] and key in RESULT_LISTS:
                continue
            elif sub in ([], {}):
                found.append(where)
            else:
                found += wasted(sub, where)
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            found += wasted(sub, f"{path}[{i}]")
    return found


def test_every_tool_result_is_compact(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}

            async def ok(tool: str, args: dict[str, Any]) -> dict[str, Any]:
                out = await call(client, tool, args)  # asserts text block == structuredContent
                assert not out.pop("is_error"), (tool, out)
                return out

            records = await session(ok)
        assert {tool for tool, _, _ in records} == set(listed)  # every tool was called
        for tool, args, result in records:
            assert wasted(result) == [], (tool, args, result)
            schema = listed[tool].output_schema or {}
            assert schema.get("properties"), tool  # a real schema, checked by the client
            assert set(schema.get("required", [])) <= set(result), (tool, result)
        by_tool: dict[str, list[dict[str, Any]]] = {}
        for tool, _, result in records:
            by_tool.setdefault(tool, []).append(result)
        # writes: ids, times and counts, not the content back (add_episode keeps seed 000's
        # 500-character preview, summary, metadata and context)
        first = by_tool["add_episode"][0]
        assert set(first) <= {
            "id",
            "content",
            "content_truncated",
            "summary",
            "metadata",
            "context",
            "created_at",
            "started_at",
            "ended_at",
            "linked_entities",
            "failed_entity_ids",
            "vectors_pending",
        }, first
        assert len(first["content"]) <= 501 and first["content_truncated"] is True
        assert first["linked_entities"] == 1 and len(first["failed_entity_ids"]) == 1
        plain = by_tool["add_episode"][1]
        assert set(plain) == {"id", "content", "created_at", "linked_entities"}, plain
        for out in by_tool["upsert_episode"]:
            assert {"id", "created", "revision", "version", "created_at"} <= set(out)
            assert not {"content", "title", "tags", "summary"} & set(out), out
        for out in by_tool["upsert_concept"]:
            assert "description" not in out["concept"], out
        assert [r["revision"] for r in by_tool["upsert_episode"]] == [1, 2]
        assert by_tool["search_episodes"][-1] == {"episodes": [], "count": 0}  # no hits: said

    run(scenario())


def _filler(rng: random.Random, chars: int) -> str:
    words = [f"w{rng.randrange(5000)}" for _ in range(chars // 5)]
    return " ".join(words)[:chars]


def _big_episodes(n: int = 5, size: int = 48 * 1024) -> list[str]:
    """n episodes of `size` characters, each with one sentence about a zebra ledger mid-way."""
    rng = random.Random(11)
    out = []
    for i in range(n):
        needle = f" The zebra ledger {i} was reconciled by Quentin on the night shift. "
        half = (size - len(needle)) // 2
        out.append(_filler(rng, half) + needle + _filler(rng, size - half - len(needle)))
    return out


def test_search_content_modes_and_the_response_cap(server: ServerUnderTest) -> None:
    texts = _big_episodes()

    async def scenario() -> dict[str, int]:
        sizes: dict[str, int] = {}
        async with connect(server.url, TOKENS["alpha"]) as client:
            ids = []
            for text in texts:
                out = await call(client, "add_episode", {"content": text, "context": "zebra"})
                ids.append(out["id"])
            args = {"query": "zebra ledger reconciled Quentin", "context": "zebra"}
            by_id = dict(zip(ids, texts, strict=True))

            full = await call(client, "search_episodes", args)
            assert full["count"] == 5
            # content and passage texts share the cap (decision 1215)
            kept = [len(e["content"]) + len(e["passage"]["text"]) for e in full["episodes"]]
            assert sum(kept) <= MAX_RESULT_CHARS and sum(kept) > MAX_RESULT_CHARS - 5
            for hit in full["episodes"]:  # five equal episodes share the cap equally
                assert hit["truncated"] is True and hit["content_chars"] == len(by_id[hit["id"]])
                assert by_id[hit["id"]].startswith(hit["content"])
                # the match lies beyond the content shown; the passage text shows it whole
                p, content = hit["passage"], by_id[hit["id"]]
                assert "zebra ledger" not in hit["content"] and "zebra ledger" in p["text"]
                assert content[p["start"] : p["end"]] == p["text"]
                whole = await call(client, "get_episode", {"id": hit["id"]})
                assert whole["content"] == by_id[hit["id"]]  # get_episode returns the rest

            passage = await call(client, "search_episodes", {**args, "content": "passage"})
            assert passage["count"] == 5
            for hit in passage["episodes"]:
                p, content = hit["passage"], by_id[hit["id"]]
                assert "content" not in hit and "truncated" not in hit
                assert content[p["start"] : p["end"]] == p["text"]
                assert "zebra ledger" in p["text"] and "Quentin" in p["text"]
                assert 300 <= len(p["text"]) <= 700 and hit["content_chars"] == len(content)

            # The content mode must not change the ranking. The local server's maintenance
            # thread embeds the pending passages of these long episodes meanwhile, and each of
            # its commits (one every few seconds) may legitimately reorder the five near-equal
            # hits: so "none" must equal a "full" search of the same state, the one just
            # before or the one just after it (a CI run saw the order change between the two).
            before = await call(client, "search_episodes", args)
            none = await call(client, "search_episodes", {**args, "content": "none"})
            after = await call(client, "search_episodes", args)
            ranked = [h["id"] for h in none["episodes"]]
            assert ranked in [[h["id"] for h in out["episodes"]] for out in (before, after)]
            for hit in none["episodes"]:
                assert not {"content", "truncated"} & set(hit)
                assert hit["content_chars"] == len(by_id[hit["id"]])
                p, content = hit["passage"], by_id[hit["id"]]  # offsets only: no text
                assert set(p) == {"start", "end"} and "Quentin" in content[p["start"] : p["end"]]

            small = await call(client, "search_episodes", {**args, "limit": 1})
            assert len(small["episodes"][0]["content"]) == len(texts[0])  # under the cap: whole
            assert "truncated" not in small["episodes"][0]
            bad = await call(client, "search_episodes", {**args, "content": "summary"})
            assert bad["is_error"] and "content" in bad["error"]["message"]
            for name, out in (("full", full), ("passage", passage), ("none", none)):
                out.pop("is_error")
                sizes[name] = len(json.dumps(out, ensure_ascii=False).encode())
        return sizes

    sizes = run(scenario())
    print(f"search_episodes over 5 x 48 KiB, bytes of the text block: {sizes}")
    assert sizes["passage"] < 16_000 and sizes["none"] < 8_000 < sizes["full"] < 80_000
