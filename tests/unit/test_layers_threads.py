"""Threads: messages, paging, the status machine and atomic claims (ADR-007 section 2)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from pydantic import ValidationError

from memlake.errors import Conflict, InvalidArgument, NotFound
from memlake.layers import threads as thread_layer

from .layers_support import Harness, race


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


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


def test_every_allowed_move_and_who_claimed(h: Harness) -> None:
    tid = h.thread()["id"]
    claim = h.call("mark_thread_status", id=tid, status="processing")
    assert claim["move"] == "claim" and claim["thread"]["claimed_by"] == "tok-a"
    assert claim["thread"]["claimed_at"] is not None
    release = h.call("mark_thread_status", id=tid, status="pending")
    assert release["move"] == "release" and release["thread"].get("claimed_by") is None
    h.as_agent("tok-b").call("mark_thread_status", id=tid, status="processing")
    done = h.call("mark_thread_status", id=tid, status="completed")
    assert done["previous_status"] == "processing" and done["thread"]["claimed_by"] == "tok-b"
    again = h.call("mark_thread_status", id=tid, status="pending")
    assert again["move"] == "reprocess" and again["thread"]["processing_status"] == "pending"


@pytest.mark.parametrize(
    ("path", "target", "expect"),
    [
        ([], "pending", "from pending to pending"),
        ([], "completed", "from pending to completed"),
        (["processing"], "processing", "already processing"),
        (["processing", "completed"], "completed", "from completed to completed"),
        (["processing", "completed"], "processing", "from completed to processing"),
    ],
)
def test_illegal_moves_are_refused_and_change_nothing(
    h: Harness, path: list[str], target: str, expect: str
) -> None:
    tid = h.thread()["id"]
    for status in path:
        h.call("mark_thread_status", id=tid, status=status)
    before = h.objects()
    with pytest.raises(Conflict) as info:
        h.call("mark_thread_status", id=tid, status=target)
    assert expect in info.value.message
    if "already" not in expect:
        assert "All moves: pending->processing (claim)" in info.value.hint
    assert h.objects() == before


def test_unknown_status_and_missing_thread(h: Harness) -> None:
    with pytest.raises(ValidationError):
        h.call("mark_thread_status", id="abc", status="done")
    with pytest.raises(NotFound):
        h.call("mark_thread_status", id="nothere", status="processing")
    with pytest.raises(NotFound):
        h.call(
            "append_thread_messages",
            thread_id="nothere",
            messages=[{"role": "user", "content": "x"}],
        )


def test_appending_to_a_completed_thread_reopens_it(h: Harness) -> None:
    tid = h.thread()["id"]
    h.call("mark_thread_status", id=tid, status="processing")
    h.call("mark_thread_status", id=tid, status="completed")
    out = h.call(
        "append_thread_messages", thread_id=tid, messages=[{"role": "user", "content": "p.s."}]
    )
    assert out["reopened"] is True and out["thread"]["processing_status"] == "pending"
    assert [t["id"] for t in h.call("get_pending_threads")["threads"]] == [tid]


def test_pending_threads_oldest_first_with_context_and_cursor(h: Harness) -> None:
    ids = [h.thread(1, context="a" if i % 2 else "b")["id"] for i in range(7)]
    h.call("mark_thread_status", id=ids[0], status="processing")
    seen, cursor = [], None
    while True:
        page = h.call("get_pending_threads", limit=2, **({"cursor": cursor} if cursor else {}))
        seen += [t["id"] for t in page["threads"]]
        assert all(t["processing_status"] == "pending" for t in page["threads"])
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    assert seen == ids[1:]
    only_a = h.call("get_pending_threads", context="a")["threads"]
    assert [t["id"] for t in only_a] == [i for n, i in enumerate(ids) if n % 2]
    first = h.call("get_pending_threads", limit=1).get("next_cursor")
    with pytest.raises(InvalidArgument, match="other filters"):
        h.call("get_pending_threads", context="a", cursor=first)
    with pytest.raises(InvalidArgument, match="cursor is not valid"):
        h.call("get_pending_threads", cursor="!!")


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


def test_two_agents_claiming_at_once_one_wins_in_process_and_across_lakes(h: Harness) -> None:
    for own_lake in (False, True):
        tid = h.thread()["id"]
        agents = [h.as_agent(f"agent-{n}", own_lake=own_lake) for n in range(2)]
        results = race(
            *(
                functools.partial(a.call, "mark_thread_status", id=tid, status="processing")
                for a in agents
            )
        )
        lost = [r for r in results if isinstance(r, Exception)]
        won = [r for r in results if not isinstance(r, Exception)]
        assert len(won) == 1 and len(lost) == 1
        assert isinstance(lost[0], Conflict) and "already processing" in lost[0].message
        winner = won[0]["thread"]["claimed_by"]
        assert winner in ("agent-0", "agent-1")
        assert h.call("get_thread", id=tid)["thread"]["claimed_by"] == winner


def test_tenants_do_not_see_each_others_threads(tmp_path: Path) -> None:
    alpha, beta = Harness(tmp_path, "alpha"), Harness(tmp_path, "beta")
    tid = beta.thread()["id"]
    with pytest.raises(NotFound):
        alpha.call("get_thread", id=tid)
    with pytest.raises(NotFound):
        alpha.call("mark_thread_status", id=tid, status="processing")
    assert alpha.call("get_pending_threads")["threads"] == []
