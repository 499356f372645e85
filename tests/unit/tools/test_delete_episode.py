"""delete_episode: its relationships go in the same commit, with cascade audit records."""

from __future__ import annotations

import pytest

from memlake.errors import NotFound
from memlake.lake import Lake
from memlake.relationships import relationship_index

from .support import Caller


def test_delete_episode_removes_its_relationships_in_the_same_commit(
    lake: Lake, call: Caller
) -> None:
    a, b, c = call.episodes(3)
    call.link(a, b)
    call.link(b, c, "causes")
    keep = call.link(a, c, "related_to")["relationship_id"]
    before = lake.snapshot("t").version
    assert call("delete_episode", id=b)["deleted"] == 1
    snap = lake.snapshot("t")
    assert snap.version == before + 1  # episode, relationships and audit in one manifest
    assert set(relationship_index(snap).rows) == {keep}
    assert [r["id"] for r in call("get_episode_relationships", episode_id=a)["relationships"]] == [
        keep
    ]
    log = call("get_audit_log", action="cascade_delete")["records"]
    assert len(log) == 2 and {r["token_id"] for r in log} == {"tok-a"}
    assert all(r["details"]["deleted_episode_id"] == b for r in log)
    with pytest.raises(NotFound):
        call.link(a, b)
