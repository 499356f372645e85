"""find_episodes: platform, tags, thread, concept, context and time filters, paging."""

from __future__ import annotations

import pytest

from memlake.errors import InvalidArgument

from .support import Harness


def test_find_episodes_filters_and_pages(h: Harness) -> None:
    t = h.thread()["id"]
    c = h.concept("lake")
    ids = []
    for day in range(1, 6):
        ids.append(
            h.call(
                "upsert_episode",
                events=f"day {day}",
                started_at=f"2026-04-0{day}T10:00:00Z",
                platform="claude" if day % 2 else "chatgpt",
                tags=["work", "lake"] if day <= 3 else ["work"],
                context="proj" if day != 5 else "other",
                **({"source_thread_id": t} if day == 4 else {}),
                **({"concept_ids": [c]} if day in (1, 2) else {}),
            )["id"]
        )

    def found(**args: object) -> list[str]:
        out = h.call("find_episodes", **args)
        assert out["mode"] == "list"
        return [e["id"] for e in out["episodes"]]

    assert found() == ids[::-1]
    assert found(platform="claude") == [ids[4], ids[2], ids[0]]
    assert found(tags=["lake", "work"]) == [ids[2], ids[1], ids[0]]
    assert found(tags=["lake", "nope"]) == []
    assert found(thread_id=t) == [ids[3]]
    assert found(concept_id=c) == [ids[1], ids[0]]
    assert found(context="other") == [ids[4]]
    assert found(time_start="2026-04-02T00:00:00Z", time_end="2026-04-03T23:00:00Z") == [
        ids[2],
        ids[1],
    ]
    first = h.call("find_episodes", platform="claude", limit=2)
    assert "concept_ids" not in first["episodes"][0]  # none: left out
    rest = h.call("find_episodes", platform="claude", limit=2, cursor=first.get("next_cursor"))
    assert [e["id"] for e in rest["episodes"]] == [ids[0]] and rest.get("next_cursor") is None
    assert rest["episodes"][0]["concept_ids"] == [c]
    with pytest.raises(InvalidArgument, match="other filters"):
        h.call("find_episodes", platform="chatgpt", cursor=first.get("next_cursor"))
