"""get_episode_history across compaction and garbage collection."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memlake.lake.compaction import compact
from memlake.lake.gc import collect_garbage

from .support import FULL, Harness


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
