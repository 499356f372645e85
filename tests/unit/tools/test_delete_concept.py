"""delete_concept (and delete_episode): links go on both sides; a parent with children stays."""

from __future__ import annotations

import pytest

from memlake.errors import Conflict, NotFound

from .support import Harness


def test_deleting_an_episode_or_concept_removes_links_on_both_sides(h: Harness) -> None:
    e1, e2 = h.episode(), h.episode()
    c1, c2 = h.concept("a"), h.concept("b")
    for e in (e1, e2):
        for c in (c1, c2):
            h.call("link_episode_to_concept", episode_id=e, concept_id=c)
    assert h.call("delete_episode", id=e1)["deleted"] == 1
    assert h.call("get_concept", id=c1)["episode_ids"] == [e2]
    out = h.call("delete_concept", id=c2)
    assert out == {"id": c2, "deleted": 1, "unlinked_episodes": 1}
    assert h.call("get_episode", id=e2)["concept_ids"] == [c1]
    with pytest.raises(NotFound):
        h.call("get_concept", id=c2)
    assert h.call("delete_concept", id=c2)["deleted"] == 0
    parent = h.concept("parent")
    h.concept("child", parent_id=parent)
    before = h.objects()
    with pytest.raises(Conflict, match="1 child"):
        h.call("delete_concept", id=parent)
    assert h.objects() == before
