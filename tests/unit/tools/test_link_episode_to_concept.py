"""link_episode_to_concept and unlink_episode_from_concept: both sides, missing or foreign ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from memlake.errors import NotFound

from .support import Harness


def sides(h: Harness, episodes: list[str], concepts: list[str]) -> tuple[set, set]:
    """(episode, concept) pairs as seen from the episode side and from the concept side."""
    from_episodes = {(e, c) for e in episodes for c in h.call("get_episode", id=e)["concept_ids"]}
    from_concepts = {(e, c) for c in concepts for e in h.call("get_concept", id=c)["episode_ids"]}
    return from_episodes, from_concepts


def test_link_and_unlink_show_both_sides(h: Harness) -> None:
    e1, e2 = h.episode(), h.episode()
    c1, c2 = h.concept("Parquet"), h.concept("S3")
    out = h.call(
        "link_episode_to_concept", episode_id=e1, concept_id=c1, position=0, confidence=0.9
    )
    assert out["created"] and out["concept_ids"] == [c1] and out["episode_ids"] == [e1]
    h.call("link_episode_to_concept", episode_id=e1, concept_id=c2, position=1)
    out = h.call("link_episode_to_concept", episode_id=e2, concept_id=c1)
    assert out["episode_ids"] == [e1, e2] and out["episode_count"] == 2
    again = h.call(
        "link_episode_to_concept", episode_id=e1, concept_id=c1, position=3, confidence=0.2
    )
    assert not again["created"]
    ents = h.call("get_episode", id=e1, include_entities=True)["entities"]
    assert [(x["id"], x["position"], x["confidence"]) for x in ents] == [(c2, 1, 1.0), (c1, 3, 0.2)]
    got = h.call("get_concept", id=c1)
    assert [(x["episode_id"], x["confidence"]) for x in got["episodes"]] == [(e1, 0.2), (e2, 1.0)]
    gone = h.call("unlink_episode_from_concept", episode_id=e1, concept_id=c1)
    assert gone["unlinked"] == 1 and gone["concept_ids"] == [c2] and gone["episode_ids"] == [e2]
    before = h.objects()
    assert h.call("unlink_episode_from_concept", episode_id=e1, concept_id=c1)["unlinked"] == 0
    assert h.objects() == before
    a, b = sides(h, [e1, e2], [c1, c2])
    assert a == b == {(e1, c2), (e2, c1)}


def test_links_to_missing_ids_change_nothing(tmp_path: Path) -> None:
    h, other = Harness(tmp_path, "alpha"), Harness(tmp_path, "beta")
    e, c = h.episode(), h.concept("X")
    foreign_e, foreign_c = other.episode(), other.concept("Y")
    before = h.objects()
    for episode_id, concept_id in [("nope", c), (e, "nope"), (foreign_e, c), (e, foreign_c)]:
        with pytest.raises(NotFound):
            h.call("link_episode_to_concept", episode_id=episode_id, concept_id=concept_id)
        with pytest.raises(NotFound):
            h.call("unlink_episode_from_concept", episode_id=episode_id, concept_id=concept_id)
    with pytest.raises(ValidationError):
        h.call("link_episode_to_concept", episode_id=e, concept_id=c, confidence=1.5)
    with pytest.raises(ValidationError):
        h.call("link_episode_to_concept", episode_id=e, concept_id="../x")
    assert h.objects() == before
