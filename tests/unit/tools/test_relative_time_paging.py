"""Paging a listing filtered by a relative time: the cursor outlives the clock moving on."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memlake import models
from memlake.timeutil import iso, now

from .support import Harness


@pytest.mark.parametrize("tool", ["list_episodes", "find_episodes"])
def test_a_cursor_keeps_working_while_7d_moves_on(
    h: Harness, tool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = now()
    ids = [
        h.call("add_episode", content=f"day {d}", started_at=iso(at - timedelta(days=d)))["id"]
        for d in (1, 2, 3, 9)
    ]
    first = h.call(tool, time_start="7d", limit=2)
    assert [e["id"] for e in first["episodes"]] == ids[:2]
    later = at + timedelta(minutes=5)
    monkeypatch.setattr(models, "now", lambda: later)  # the next page comes a little later
    rest = h.call(tool, time_start="7 days", limit=2, cursor=first["next_cursor"])
    assert [e["id"] for e in rest["episodes"]] == ids[2:3]  # day 9 is outside the window
    assert "next_cursor" not in rest
    with pytest.raises(Exception, match="other filters"):  # another window is another listing
        h.call(tool, time_start="8d", limit=2, cursor=first["next_cursor"])
