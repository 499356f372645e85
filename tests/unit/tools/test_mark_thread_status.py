"""mark_thread_status: the status machine (ADR-007 section 2), refusals, atomic claims."""

from __future__ import annotations

import functools

import pytest
from pydantic import ValidationError

from memlake.errors import Conflict, NotFound

from .support import Harness, race


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
