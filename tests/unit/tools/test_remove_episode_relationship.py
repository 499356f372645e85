"""remove_episode_relationship: removal by id, already removed, the pair free again."""

from __future__ import annotations

import pytest

from memlake.errors import NotFound

from .support import Caller


def test_remove_and_already_removed(call: Caller) -> None:
    a, b = call.episodes(2)
    rel = call.link(a, b)["relationship_id"]
    out = call("remove_episode_relationship", relationship_id="relationship:" + rel)
    assert out["success"] and out["from_episode_id"] == a
    with pytest.raises(NotFound, match="already removed"):
        call("remove_episode_relationship", relationship_id=rel)
    with pytest.raises(NotFound, match="not found"):
        call("remove_episode_relationship", relationship_id="01NEVERADDED")
    assert call("check_relationship_exists", from_episode_id=a, to_episode_id=b)["exists"] is False
    call.link(b, a)  # the order is free again
