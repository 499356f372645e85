"""get_thread: message order and paging, tenant isolation of the thread tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlake.errors import NotFound

from .support import Harness


def test_messages_keep_order_and_page(h: Harness) -> None:
    t = h.thread(3, title="Storage chat", context="memlake")
    assert t["processing_status"] == "pending" and t["message_count"] == 3
    more = [
        {"role": "tool", "content": f"x{i}", "at": "2026-01-02T03:04:05+01:00"} for i in range(4)
    ]
    out = h.call("append_thread_messages", thread_id="thread:" + t["id"], messages=more)
    assert (out["appended"], out["first_seq"], out["reopened"]) == (4, 3, False)
    assert out["thread"]["message_count"] == 7
    page = h.call("get_thread", id=t["id"], offset=2, limit=3)
    assert [m["seq"] for m in page["messages"]] == [2, 3, 4]
    assert [m["content"] for m in page["messages"]] == ["m2", "x0", "x1"]
    assert page["messages"][1]["at"] == "2026-01-02T02:04:05.000000Z"
    assert page.get("next_offset") == 5
    rest = h.call("get_thread", id=t["id"], offset=5)
    assert [m["content"] for m in rest["messages"]] == ["x2", "x3"] and rest.get(
        "next_offset"
    ) is None
    assert h.call("get_thread", id=t["id"])["thread"]["title"] == "Storage chat"


def test_tenants_do_not_see_each_others_threads(tmp_path: Path) -> None:
    alpha, beta = Harness(tmp_path, "alpha"), Harness(tmp_path, "beta")
    tid = beta.thread()["id"]
    with pytest.raises(NotFound):
        alpha.call("get_thread", id=tid)
    with pytest.raises(NotFound):
        alpha.call("mark_thread_status", id=tid, status="processing")
    assert alpha.call("get_pending_threads")["threads"] == []
