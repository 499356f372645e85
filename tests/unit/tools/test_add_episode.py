"""add_episode: entity_ids are linked with their position; unknown ids are reported."""

from __future__ import annotations

from .support import Harness


def test_add_episode_links_entity_ids_with_position(h: Harness) -> None:
    c1, c2 = h.concept("one"), h.concept("two")
    out = h.call("add_episode", content="talked about one and two", entity_ids=[c2, "ghost", c1])
    assert out["linked_entities"] == 2
    assert out["failed_entity_ids"] == [{"entity_id": "ghost", "reason": "no concept with this id"}]
    ents = h.call("get_episode", id=out["id"], include_entities=True)["entities"]
    assert [(x["id"], x["position"], x["confidence"]) for x in ents] == [(c2, 0, 1.0), (c1, 2, 1.0)]
    assert h.call("get_concept", id=c1)["episode_ids"] == [out["id"]]
