"""search_episodes content="evidence" end to end through /mcp with the official client, on both
lakes (issues 24 and 45, decisions 2401 and 4501): the turns that answer, across episodes, in a
lean shape, within a budget on the answer's JSON as sent."""

from __future__ import annotations

from typing import Any

from .conftest import TOKENS, ServerUnderTest
from .mcp_helpers import call, call_sent, connect, run


def _chat(*turns: tuple[str, str]) -> str:
    return "\n".join(f"{who}: {text}" for who, text in turns)


FILLER = [
    ("Caroline", "Morning! How was your weekend?"),
    ("Melanie", "Pretty quiet, we mostly stayed in and watched films."),
    ("Caroline", "Same here honestly, it rained the whole time."),
    ("Melanie", "Did you see the match on Sunday? What a finish."),
]
SESSIONS = {
    "adoption": _chat(
        *FILLER,
        ("Caroline", "I spent Saturday researching adoption agencies for the first time."),
        ("Melanie", "That is huge! Which one are you looking at?"),
        ("Caroline", "Probably Bright Futures, they work with single parents."),
        *FILLER,
    ),
    "pottery": _chat(
        *FILLER,
        ("Melanie", "I signed up for pottery classes at Clay Corner, Tuesdays at six."),
        ("Caroline", "Oh fun! Send me a photo of your first bowl."),
        *FILLER,
    ),
    "hike": _chat(
        *FILLER,
        ("Caroline", "We hiked Eagle Ridge with the kids, eleven miles in the end."),
        ("Melanie", "Wow, how did the little one manage?"),
        *FILLER,
    ),
}


def test_evidence_shows_the_answering_turns_within_the_budget(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as client:
            ids: dict[str, str] = {}
            for name, text in SESSIONS.items():
                out = await call(
                    client,
                    "add_episode",
                    {
                        "content": text,
                        "context": "friends",
                        "started_at": "2024-05-0" + str(len(ids) + 1),
                    },
                )
                assert not out["is_error"], out
                ids[out["id"]] = name
            args: dict[str, Any] = {
                "query": "Which adoption agency is Caroline looking at?",
                "context": "friends",
                "content": "evidence",
                "budget": 500,
            }
            out, sent = await call_sent(client, "search_episodes", args)
            assert len(sent) <= 500, sent  # the budget bounds the answer as sent
            assert out["episodes"] == [] and out["count"] == len(out["evidence"]) >= 1
            first = out["evidence"][0]
            assert ids[first["id"]] == "adoption"
            assert set(first) <= {"id", "at", "context", "title", "score", "excerpts"}
            assert "context" not in first and first["at"] == "2024-05-01T00:00Z"  # asked for it
            assert 0 < first["score"] <= 1 and round(first["score"], 2) == first["score"]
            for hit in out["evidence"]:
                whole = (await call(client, "get_episode", {"id": hit["id"]}))["content"]
                for text in hit["excerpts"]:
                    assert text in whole and text.split(":")[0] in ("Caroline", "Melanie")
            best = " ".join(first["excerpts"])
            assert "Bright Futures" in best, first

            # a larger budget shows more, never more than asked
            wide, wide_sent = await call_sent(client, "search_episodes", {**args, "budget": 2_000})
            shown = sum(len(t) for h in wide["evidence"] for t in h["excerpts"])
            assert sum(len(t) for h in out["evidence"] for t in h["excerpts"]) < shown
            assert len(wide_sent) <= 2_000

            # not filtered by context: each episode says its own
            anywhere = await call(client, "search_episodes", {**args, "context": None})
            assert anywhere["evidence"][0]["context"] == "friends"

            # the other modes are unchanged: no evidence field
            plain = await call(client, "search_episodes", {**args, "content": "passage"})
            assert "evidence" not in plain and plain["episodes"]

            for bad in (0, 499, 65_537, "lots"):
                err = await call(client, "search_episodes", {**args, "budget": bad})
                assert err["is_error"] and "budget" in err["error"]["message"], err
            nothing = await call(client, "search_episodes", {**args, "context": "nobody"})
            assert nothing == {"is_error": False, "episodes": [], "count": 0}  # none: said

    run(scenario())
