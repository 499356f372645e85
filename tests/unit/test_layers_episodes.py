"""upsert_episode (ADR-007 model), its revision history, thread binding and find_episodes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from memlake.errors import Conflict, InvalidArgument, NotFound
from memlake.lake.compaction import compact
from memlake.lake.gc import collect_garbage

from .layers_support import Harness

FULL = {
    "events": "## 09:00\nWe compared Parquet and Avro.\n## 09:30\nParquet won.",
    "source_title": "Storage format decision",
    "started_at": "2026-03-01T09:00:00+01:00",
    "ended_at": "2026-03-01T09:45:00+01:00",
    "timezone": "Europe/Berlin",
    "platform": "claude",
    "client": "claude-desktop",
    "model": "claude-opus-4",
    "voice_mode": True,
    "input_modalities": ["voice", "text", "voice"],
    "output_modalities": ["text"],
    "qualities": {"mood": "focused", "depth": 3},
    "tags": ["storage", "decision"],
    "context": "memlake",
}


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def test_create_with_every_field_and_read_it_back(h: Harness) -> None:
    out = h.call("upsert_episode", **FULL)
    assert out["created"] and out["revision"] == 1 and out["version"] >= 1
    got = h.call("get_episode", id=out["id"])
    assert got["content"] == FULL["events"] and got["title"] == FULL["source_title"]
    assert got["started_at"] == "2026-03-01T08:00:00.000000Z"
    assert got["input_modalities"] == ["voice", "text"]  # de-duplicated, order kept
    for key in ("timezone", "platform", "client", "model", "voice_mode", "qualities", "tags"):
        assert got[key] == FULL[key], key
    listed = h.call("list_episodes", context="memlake")["episodes"]
    assert listed[0]["platform"] == "claude" and listed[0]["title"] == FULL["source_title"]


def test_update_keeps_omitted_fields_and_history_walks_revisions(h: Harness) -> None:
    eid = h.call("upsert_episode", **FULL)["id"]
    second = h.call("upsert_episode", id=eid, events="## 10:00 revised")
    assert not second["created"] and second["revision"] == 2
    kept = h.call("get_episode", id=eid)
    assert kept["platform"] == "claude" and kept["tags"] == FULL["tags"]
    third = h.call("upsert_episode", id=eid, tags=["storage"], qualities=None)
    got = h.call("get_episode", id=eid)
    assert third["revision"] == 3 and "qualities" not in got and got["content"].endswith("revised")
    assert "content" not in third and "platform" not in third  # a write returns ids and times
    hist = h.call("get_episode_history", id=eid, full_content=True)
    assert [r["episode"]["revision"] for r in hist["revisions"]] == [3, 2, 1]
    versions = [r["version"] for r in hist["revisions"]]
    assert versions[:2] == [third["version"], second["version"]] and versions[2] < versions[1]
    assert hist["revisions"][2]["episode"]["content"] == FULL["events"]
    assert "next_version" not in hist and hist["older_collected"] is False
    page = h.call("get_episode_history", id=eid, limit=1)
    assert page["count"] == 1 and page.get("next_version") == second["version"]
    rest = h.call("get_episode_history", id=eid, from_version=page.get("next_version"))
    assert [r["episode"]["revision"] for r in rest["revisions"]] == [2, 1]
    other = h.call("upsert_episode", events="another episode")["version"]
    with pytest.raises(InvalidArgument, match="no revision"):
        h.call("get_episode_history", id=eid, from_version=other)


def test_an_upsert_that_changes_nothing_writes_nothing(h: Harness) -> None:
    c = h.concept("c")
    first = h.call("upsert_episode", **FULL, concept_ids=[c])
    before = h.objects()
    again = h.call("upsert_episode", id=first["id"], **FULL, concept_ids=[c])
    assert again["revision"] == 1 and again["version"] == first["version"]
    assert not again["created"] and h.objects() == before
    assert h.call("get_episode_history", id=first["id"])["count"] == 1


def test_history_survives_compaction_and_reports_collected_manifests(h: Harness) -> None:
    eid = h.call("upsert_episode", **FULL)["id"]
    for n in range(3):
        h.call("upsert_episode", id=eid, events=f"revision {n + 2}")
    compact(h.lake, "t", min_segments=2)
    hist = h.call("get_episode_history", id=eid)
    assert [r["episode"]["content"] for r in hist["revisions"]][:2] == ["revision 4", "revision 3"]
    assert hist["count"] == 4
    later = datetime.now(UTC) + timedelta(days=30)
    collect_garbage(h.lake, "t", grace_seconds=60, history_seconds=3600, now=later)
    hist = h.call("get_episode_history", id=eid)
    assert hist["count"] == 1 and hist["older_collected"] is True
    assert h.call("get_episode", id=eid)["content"] == "revision 4"


def test_create_needs_events_and_times_stay_ordered(h: Harness) -> None:
    before = h.objects()
    with pytest.raises(InvalidArgument, match="events is required"):
        h.call("upsert_episode", id="fresh-id", source_title="no body")
    with pytest.raises(ValidationError):
        h.call("upsert_episode", events="   ")
    with pytest.raises(ValidationError):
        h.call("upsert_episode", events="x", timezone="Mars/Olympus")
    with pytest.raises(ValidationError):
        h.call("upsert_episode", events="x", input_modalities=["Voice Mode"])
    with pytest.raises(ValidationError):
        h.call("upsert_episode", events="x", tags=["t"] * 33)
    with pytest.raises(ValidationError):
        h.call("upsert_episode", events="x", qualities={"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}})
    with pytest.raises(InvalidArgument, match="limit is"):
        h.call("upsert_episode", events="x" * (256 * 1024 + 1))
    assert h.objects() == before
    eid = h.call("upsert_episode", **FULL)["id"]
    before = h.objects()
    with pytest.raises(InvalidArgument, match="after ended_at"):
        h.call("upsert_episode", id=eid, started_at="2026-03-02T00:00:00Z")
    assert h.objects() == before
    tz = h.call("upsert_episode", events="x", timezone="+05:30")["id"]
    assert h.call("get_episode", id=tz)["timezone"] == "+05:30"


def test_thread_binding_is_one_to_one(h: Harness) -> None:
    t1, t2 = h.thread()["id"], h.thread()["id"]
    eid = h.call("upsert_episode", events="from t1", source_thread_id=t1)["id"]
    assert h.call("get_thread", id=t1)["thread"]["episode_id"] == eid
    assert h.call("upsert_episode", id=eid, source_thread_id=t1)["source_thread_id"] == t1
    before = h.objects()
    with pytest.raises(Conflict, match="already has episode"):
        h.call("upsert_episode", events="second", source_thread_id=t1)
    with pytest.raises(Conflict, match="fixed"):
        h.call("upsert_episode", id=eid, source_thread_id=t2)
    with pytest.raises(NotFound):
        h.call("upsert_episode", events="x", source_thread_id="missing-thread")
    assert h.objects() == before
    assert h.call("get_thread", id=t2)["thread"].get("episode_id") is None
    h.call("delete_episode", id=eid)
    assert h.call("get_thread", id=t1)["thread"].get("episode_id") is None
    assert h.call("upsert_episode", events="again", source_thread_id=t1)["source_thread_id"] == t1


def test_concept_ids_replace_the_links_and_refuse_unknown_ids(h: Harness) -> None:
    a, b, c = h.concept("a"), h.concept("b"), h.concept("c")
    eid = h.call("upsert_episode", events="x", concept_ids=[a, b])["id"]
    h.call("link_episode_to_concept", episode_id=eid, concept_id=b, confidence=0.4)
    out = h.call("upsert_episode", id=eid, concept_ids=[c, b])
    assert out["concept_ids"] == [c, b]
    ents = h.call("get_episode", id=eid, include_entities=True)["entities"]
    assert [(x["id"], x["position"], x["confidence"]) for x in ents] == [(c, 0, 1.0), (b, 1, 0.4)]
    assert h.call("get_concept", id=a)["episode_ids"] == []  # a result list: kept when empty
    before = h.objects()
    with pytest.raises(NotFound, match="ghost"):
        h.call("upsert_episode", id=eid, concept_ids=[a, "ghost"], events="changed")
    assert h.objects() == before
    assert h.call("upsert_episode", id=eid, events="keeps links")["concept_ids"] == [c, b]


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
