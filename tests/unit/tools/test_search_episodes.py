"""search_episodes in-process: the matched passage on every hit, min_score, the breakdown, the
shared cap with passage texts, relative time filters (decision 1215)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.mcp.dispatch import call_tool
from memlake.search import answers
from memlake.search.query.best_passage import Span
from memlake.search.query.params import SearchHit
from memlake.services import Services
from memlake.store.local import LocalStore
from memlake.timeutil import iso, now
from memlake.tools import search_episodes as tool
from memlake.tools.search_episodes import (
    MAX_RESULT_CHARS,
    PASSAGE_TEXT_FROM,
    ScoreBreakdown,
    SearchEpisodesInput,
)

NEEDLE = " The walrus budget was approved by Ingrid after the long review. "


def _filler(rng: random.Random, chars: int) -> str:
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(chars // 5))[:chars]


def _with_needle(rng: random.Random, size: int, needle: str = NEEDLE) -> str:
    half = (size - len(needle)) // 2
    return _filler(rng, half) + needle + _filler(rng, size - half - len(needle))


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolContext]:
    root: Path = tmp_path_factory.mktemp("lake")
    yield ToolContext(Principal("t"), Services.build(Settings(data_dir=root), LocalStore(root)))


def _call(ctx: ToolContext, tool_name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = call_tool({"name": tool_name, "arguments": args}, ctx).to_mcp()
    if result["isError"]:
        return {"error": result["content"][0]["text"]}
    return result["structuredContent"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def world(ctx: ToolContext) -> dict[str, str]:
    """A short episode (under PASSAGE_TEXT_FROM), a long one, and one started 3 days ago."""
    rng = random.Random(5)
    texts = {
        "short": "Ingrid approved the walrus budget on Tuesday after a short review.",
        "long": _with_needle(rng, 6_000),
        "old": "We planned the otter migration and its rollback. " * 3,
    }
    ids = {}
    for name, text in texts.items():
        args: dict[str, Any] = {"content": text, "context": "surface"}
        if name == "old":
            args["started_at"] = iso(now() - timedelta(days=3))
        else:
            args["started_at"] = "2026-01-05T10:00:00Z"
        ids[name] = _call(ctx, "add_episode", args)["id"]
    return {**ids, **{f"{k}:text": v for k, v in texts.items()}}


def _search(ctx: ToolContext, **args: Any) -> dict[str, Any]:
    return _call(ctx, "search_episodes", {"context": "surface", **args})


def test_every_hit_carries_its_matched_passage_and_when_it_happened(
    ctx: ToolContext, world: dict[str, str]
) -> None:
    for mode in ("full", "passage", "none"):
        out = _search(ctx, query="walrus budget Ingrid", content=mode)
        hits = {e["id"]: e for e in out["episodes"]}
        assert {world["short"], world["long"]} <= set(hits), mode
        for name in ("short", "long"):
            hit, content = hits[world[name]], world[f"{name}:text"]
            p = hit["passage"]
            assert 0 <= p["start"] < p["end"] <= len(content), (mode, p)
            assert "walrus" in content[p["start"] : p["end"]], (mode, name)
            assert hit["started_at"] == "2026-01-05T10:00:00.000000Z"
            # the text: always with passage, never with none, with full only for a long content
            shows_text = mode == "passage" or (mode == "full" and len(content) > PASSAGE_TEXT_FROM)
            assert ("text" in p) is shows_text, (mode, name, p)
            if shows_text:
                assert p["text"] == content[p["start"] : p["end"]]
            if mode == "full":
                assert hit["content"] == content
            else:
                assert "content" not in hit and hit["content_chars"] == len(content)
        assert set(hits[world["short"]]["breakdown"]) >= {"fused", "score"}
        assert "rrf_score" not in hits[world["short"]]["breakdown"]


def test_the_searchs_own_passage_is_shown_when_it_says_one(
    ctx: ToolContext, world: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = answers.search
    content = world["long:text"]
    at = content.index("w", 200)  # a passage far from the needle, as the search might pick
    chosen = {world["long"]: (at, at + 80)}

    def with_passage(*args: Any, **kwargs: Any) -> list[SearchHit]:
        hits = real(*args, **kwargs)
        return [dataclasses.replace(h, passage=chosen.get(h.id, h.passage)) for h in hits]

    monkeypatch.setattr(answers, "search", with_passage)
    out = _search(ctx, query="walrus budget Ingrid", content="passage")
    p = next(e["passage"] for e in out["episodes"] if e["id"] == world["long"])
    assert p["start"] <= at and at + 80 <= p["end"]  # the search's passage, widened
    assert "walrus" not in p["text"] and p["text"] == content[p["start"] : p["end"]]
    chosen[world["long"]] = (5, len(content) + 10)  # offsets that do not fit: best_span instead
    out = _search(ctx, query="walrus budget Ingrid", content="passage")
    p = next(e["passage"] for e in out["episodes"] if e["id"] == world["long"])
    assert "walrus" in p["text"]


def test_min_score_drops_weaker_hits_and_an_impossible_one_returns_none(
    ctx: ToolContext, world: dict[str, str]
) -> None:
    everything = _search(ctx, query="walrus budget Ingrid otter", content="none")["episodes"]
    scores = [e["score"] for e in everything]
    assert len(scores) >= 2 and scores[0] > scores[-1]
    cut = (scores[0] + scores[-1]) / 2
    kept = _search(ctx, query="walrus budget Ingrid otter", content="none", min_score=cut)
    assert [e["id"] for e in kept["episodes"]] == [e["id"] for e in everything if e["score"] >= cut]
    assert kept["count"] < len(everything)
    assert _search(ctx, query="walrus budget", min_score=0)["count"] >= 2
    none = _search(ctx, query="zzyzx qwv unrelated", min_score=0.99)
    assert none == {"episodes": [], "count": 0}
    for bad in (1.5, -0.1, "high"):
        error = _search(ctx, query="walrus", min_score=bad)["error"]
        assert "min_score" in error, error


def test_relative_time_filters_find_the_episode_of_three_days_ago(
    ctx: ToolContext, world: dict[str, str]
) -> None:
    def found(**args: Any) -> set[str]:
        return {e["id"] for e in _search(ctx, query="otter migration", **args)["episodes"]}

    assert world["old"] in found(time_start="7d")
    assert world["old"] in found(time_start="1 week ago", time_end="now")
    assert world["old"] not in found(time_start="2d")
    assert world["old"] not in found(time_start="yesterday")
    assert world["old"] in found(time_end="2 days ago")
    error = _search(ctx, query="otter", time_start="7x")["error"]
    assert "time_start" in error and "7d" in error and "ISO 8601" in error


def test_the_cap_counts_passage_texts_and_keeps_them_first() -> None:
    """Long contents in full mode: content and passage text share the cap; a cut hit keeps its
    passage text whole (why it matched) and the start of its content."""
    rng = random.Random(3)
    content = _with_needle(rng, 48 * 1024)
    start = content.index(NEEDLE)
    span = Span(start, start + 600)
    hits = [
        SearchHit(id=f"e{i}", score=0.5, breakdown=_breakdown(), row=_row(f"e{i}", content))
        for i in range(5)
    ]
    shaped = tool._shape(hits, [span] * 5, "full")
    total = sum(len(e.content or "") + len(e.passage.text or "") for e in shaped)
    assert MAX_RESULT_CHARS - 5 <= total <= MAX_RESULT_CHARS
    for e in shaped:
        assert e.truncated and e.content_chars == len(content)
        assert e.passage.text == content[span.start : span.end] and NEEDLE in e.passage.text
        assert content.startswith(e.content or "x")


def _breakdown() -> dict[str, Any]:
    return {"bm25_rank": 1, "vector_rank": 1, "fused": 0.5, "recency": None, "score": 0.5}


def _row(id_: str, content: str) -> dict[str, Any]:
    return {"id": id_, "content": content, "created_at": now(), "revision": 1}


def test_the_breakdown_shows_each_signal_and_omits_absent_ones() -> None:
    new = ScoreBreakdown(
        bm25_rank=1,
        bm25_score=0.7,
        vector_rank=None,
        vector_score=None,
        fused=0.6,
        rerank=0.9,
        recency=1.0,
        score=0.9,
    )
    assert new.model_dump(mode="json") == {
        "bm25_rank": 1,
        "bm25_score": 0.7,
        "fused": 0.6,
        "rerank": 0.9,
        "recency": 1.0,
        "score": 0.9,
    }


def test_min_score_is_validated() -> None:
    assert SearchEpisodesInput(query="x", min_score=0.3).min_score == 0.3
    for bad in (1.01, -1, "much"):
        with pytest.raises(ValidationError, match="min_score"):
            SearchEpisodesInput(query="x", min_score=bad)
