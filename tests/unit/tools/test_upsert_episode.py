"""upsert_episode (ADR-007 model): every field, partial updates, no-op writes, bounds, thread
binding, concept_ids."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memlake.errors import Conflict, InvalidArgument, NotFound

from .support import FULL, Harness


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
