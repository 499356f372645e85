"""append_thread_messages: reopening a completed thread, message and size limits."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memlake.errors import InvalidArgument
from memlake.layers import threads as thread_layer

from .support import Harness


def test_appending_to_a_completed_thread_reopens_it(h: Harness) -> None:
    tid = h.thread()["id"]
    h.call("mark_thread_status", id=tid, status="processing")
    h.call("mark_thread_status", id=tid, status="completed")
    out = h.call(
        "append_thread_messages", thread_id=tid, messages=[{"role": "user", "content": "p.s."}]
    )
    assert out["reopened"] is True and out["thread"]["processing_status"] == "pending"
    assert [t["id"] for t in h.call("get_pending_threads")["threads"]] == [tid]


def test_message_limits(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    tid = h.thread(1)["id"]
    before = h.objects()
    bad_batches = [
        [{"role": "user", "content": "x"}] * 101,
        [{"role": "user", "content": "x" * (64 * 1024 + 1)}],
        [{"role": "user", "content": "  "}],
        [{"role": "robot", "content": "x"}],
        [{"role": "user", "content": "x", "at": "noon"}],
        [],
    ]
    for batch in bad_batches:
        with pytest.raises(ValidationError):
            h.call("append_thread_messages", thread_id=tid, messages=batch)
    big = [{"role": "user", "content": "y" * 60_000}] * 20  # 1.2 MB in one call
    with pytest.raises(InvalidArgument, match="at most 1,048,576"):
        h.call("append_thread_messages", thread_id=tid, messages=big)
    monkeypatch.setattr(thread_layer, "MAX_THREAD_MESSAGES", 3)
    h.call("append_thread_messages", thread_id=tid, messages=[{"role": "user", "content": "2"}] * 2)
    after_ok = h.objects()
    with pytest.raises(InvalidArgument, match="limit of 3"):
        h.call("append_thread_messages", thread_id=tid, messages=[{"role": "user", "content": "z"}])
    assert h.objects() == after_ok and after_ok != before
