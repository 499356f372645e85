"""get_episode_relationships: direction, type and strength filters, limit, bad arguments."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from memlake.errors import NotFound

from .support import Caller


def test_get_episode_relationships_filters(call: Caller) -> None:
    a, b, c = call.episodes(3)
    out_ab = call.link(a, b, strength=0.9)["relationship_id"]
    in_ca = call.link(c, a, "causes", strength=0.3)["relationship_id"]
    rel_ac = call.link(a, c, "related_to", strength=0.6)["relationship_id"]

    def ids(**args: Any) -> list[str]:
        return [
            r["id"]
            for r in call("get_episode_relationships", episode_id=a, **args)["relationships"]
        ]

    assert ids() == [rel_ac, in_ca, out_ab]  # newest first
    assert ids(direction="outgoing") == [rel_ac, out_ab]
    assert ids(direction="incoming") == [in_ca]
    assert ids(relationship_type="causes") == [in_ca]
    assert ids(min_strength=0.6) == [rel_ac, out_ab]
    limited = call("get_episode_relationships", episode_id=a, limit=1)
    assert limited["count"] == 1 and limited["total"] == 3 and limited["truncated"]
    with pytest.raises(NotFound):
        call("get_episode_relationships", episode_id="missing1")
    with pytest.raises(ValidationError):
        call("get_episode_relationships", episode_id=a, direction="sideways")
