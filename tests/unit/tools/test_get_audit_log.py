"""get_audit_log: every relationship change, newest first, filters and paging."""

from __future__ import annotations

import pytest

from memlake.errors import MemlakeError

from .support import Caller


def test_audit_records_every_change_newest_first_with_paging(call: Caller) -> None:
    a, b, c = call.episodes(3)
    r1 = call.link(a, b, strength=0.5)["relationship_id"]
    r2 = call.link(b, c, "causes")["relationship_id"]
    call("remove_episode_relationship", relationship_id=r1)
    log = call("get_audit_log")["records"]
    assert [(r["action"], r["relationship_id"]) for r in log] == [
        ("remove_relationship", r1),
        ("add_relationship", r2),
        ("add_relationship", r1),
    ]
    assert log[2]["details"] == {"strength": 0.5, "metadata": {}}
    assert {r["tenant"] for r in log} == {"t"} and {r["token_id"] for r in log} == {"tok-a"}
    first = call("get_audit_log", limit=2)
    second = call("get_audit_log", limit=2, cursor=first.get("next_cursor"))
    assert [r["id"] for r in first["records"] + second["records"]] == [r["id"] for r in log]
    assert second.get("next_cursor") is None
    assert [r["relationship_id"] for r in call("get_audit_log", relationship_id=r1)["records"]] == [
        r1,
        r1,
    ]
    assert len(call("get_audit_log", episode_id=c)["records"]) == 1
    with pytest.raises(MemlakeError, match="cursor"):
        call("get_audit_log", cursor="not-a-cursor")
    with pytest.raises(MemlakeError, match="other filters"):
        call("get_audit_log", cursor=first.get("next_cursor"), episode_id=a)
