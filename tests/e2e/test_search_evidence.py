"""search_episodes content="evidence" end to end through /mcp with the official client, on both
lakes (issue 24, decision 2401): the turns that answer, across episodes, within the budget."""

from __future__ import annotations

from typing import Any

from .conftest import TOKENS, ServerUnderTest
from .mcp_helpers import call, connect, run


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
                "budget": 300,
            }
            out = await call(client, "search_episodes", args)
            assert not out["is_error"], out
            assert out["episodes"] == [] and out["count"] == len(out["evidence"]) >= 1
            first = out["evidence"][0]
            assert ids[first["id"]] == "adoption"
            assert set(first) <= {"id", "context", "started_at", "title", "score", "passages"}
            assert first["context"] == "friends" and first["started_at"].startswith("2024-05-01")
            shown = 0
            for hit in out["evidence"]:
                whole = (await call(client, "get_episode", {"id": hit["id"]}))["content"]
                for p in hit["passages"]:
                    assert whole[p["start"] : p["end"]] == p["text"]  # exact offsets
                    assert p["speaker"] in ("Caroline", "Melanie")
                    shown += len(p["text"])
            assert shown <= 300
            best = "".join(p["text"] for p in first["passages"])
            assert "researching adoption agencies" in best
            assert any(
                p["speaker"] == "Caroline" and "adoption" in p["text"] for p in first["passages"]
            )

            # a larger budget shows more, never more than asked
            wide = await call(client, "search_episodes", {**args, "budget": 2_000})
            total = sum(len(p["text"]) for h in wide["evidence"] for p in h["passages"])
            assert shown < total <= 2_000

            # the other modes are unchanged: no evidence field
            plain = await call(client, "search_episodes", {**args, "content": "passage"})
            assert "evidence" not in plain and plain["episodes"]

            for bad in (0, 99, 65_537, "lots"):
                err = await call(client, "search_episodes", {**args, "budget": bad})
                assert err["is_error"] and "budget" in err["error"]["message"], err
            nothing = await call(client, "search_episodes", {**args, "context": "nobody"})
            assert nothing == {"is_error": False, "episodes": [], "count": 0}  # none: said

    run(scenario())
