"""search_episodes content="evidence" (decision 4501): `budget` bounds the answer as the server
sends it (the text block's JSON, in characters), and the shape is lean: each episode says its
id, time and context once, each excerpt is its text."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.mcp.dispatch import call_tool
from memlake.services import Services
from memlake.store.local import LocalStore
from tests.bench import real_chats

QUERY = "What pets does she have? the puppy from the shelter"
#: text a JSON encoder escapes (quotes, backslashes, control characters) and characters
#: beyond the BMP: the budget counts the escaped form
HOSTILE = (
    'mila_k: the puppy from the shelter said "woof" \\o/ \t twice 🐶🐶\n'
    'dan: a "puppy" \\\\ shelter \u0001 story 🐕 ' + "the puppy " * 30
)


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolContext]:
    root: Path = tmp_path_factory.mktemp("lake")
    context = ToolContext(Principal("t"), Services.build(Settings(data_dir=root), LocalStore(root)))
    conv = real_chats.corpus(1, seed=5)[0]
    sessions = [*conv.sessions[:10], HOSTILE]
    for i, text in enumerate(sessions):
        args = {"content": text, "context": "friends" if i % 3 else "other"}
        args["started_at"] = conv.dates[min(i, len(conv.dates) - 1)].isoformat()
        _sent(context, "add_episode", args)
    yield context


def _sent(ctx: ToolContext, tool: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    result = call_tool({"name": tool, "arguments": args}, ctx).to_mcp()
    text = result["content"][0]["text"]
    assert not result["isError"], text
    assert json.loads(text) == result["structuredContent"]
    return result["structuredContent"], text


def _contents(ctx: ToolContext) -> dict[str, str]:
    out, _ = _sent(ctx, "list_episodes", {"limit": 50})
    ids = [e["id"] for e in out["episodes"]]
    return {i: _sent(ctx, "get_episode", {"id": i})[0]["content"] for i in ids}


def test_the_answer_as_sent_fits_the_budget_and_grows_with_it(ctx: ToolContext) -> None:
    contents = _contents(ctx)
    shown_before = 0
    for budget in (500, 700, 1_000, 2_000, 4_000, 8_000, 16_000):
        out, sent = _sent(
            ctx, "search_episodes", {"query": QUERY, "content": "evidence", "budget": budget}
        )
        assert len(sent) <= budget, (budget, len(sent))
        assert out["episodes"] == [] and out["count"] == len(out["evidence"]) >= 1
        shown = 0
        for e in out["evidence"]:
            assert set(e) <= {"id", "at", "context", "title", "score", "excerpts"}
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\dZ", e["at"]), e["at"]
            assert e["context"] in ("friends", "other")  # not filtered: said per episode
            for text in e["excerpts"]:
                assert text and text in contents[e["id"]]
                shown += len(text)
        assert shown >= shown_before, budget  # more budget never shows less
        shown_before = shown
    assert shown_before > 3_000  # the last budget was used, not a few lines of it


def test_escaped_text_is_counted_as_sent(ctx: ToolContext) -> None:
    for budget in (500, 600, 900, 1_300):
        out, sent = _sent(
            ctx,
            "search_episodes",
            {"query": "puppy shelter woof", "content": "evidence", "budget": budget},
        )
        assert len(sent) <= budget
        assert any("🐶" in t or '"' in t for e in out["evidence"] for t in e["excerpts"]), sent


def test_the_context_filtered_by_is_not_repeated(ctx: ToolContext) -> None:
    args = {"query": QUERY, "content": "evidence", "context": "friends", "budget": 3_000}
    out, sent = _sent(ctx, "search_episodes", args)
    assert out["evidence"] and all("context" not in e for e in out["evidence"])
    assert '"context"' not in sent and len(sent) <= 3_000


def test_a_budget_below_the_floor_is_refused_with_its_reason(ctx: ToolContext) -> None:
    result = call_tool(
        {
            "name": "search_episodes",
            "arguments": {"query": QUERY, "content": "evidence", "budget": 120},
        },
        ctx,
    ).to_mcp()
    assert result["isError"] and "budget" in result["content"][0]["text"]
