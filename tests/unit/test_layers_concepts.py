"""Concepts and episode<->concept links: hierarchy, cycles, both sides, cleanup on delete."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from pydantic import ValidationError

from memlake.errors import Conflict, InvalidArgument, NotFound
from memlake.layers.fields import MAX_HIERARCHY_DEPTH

from .layers_support import Harness, race


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def sides(h: Harness, episodes: list[str], concepts: list[str]) -> tuple[set, set]:
    """(episode, concept) pairs as seen from the episode side and from the concept side."""
    from_episodes = {(e, c) for e in episodes for c in h.call("get_episode", id=e)["concept_ids"]}
    from_concepts = {(e, c) for c in concepts for e in h.call("get_concept", id=c)["episode_ids"]}
    return from_episodes, from_concepts


def test_create_update_and_partial_fields(h: Harness) -> None:
    out = h.call("upsert_concept", name="Parquet", kind="technology", description="columnar")
    cid = out["concept"]["id"]
    assert out["created"] and out["concept"]["kind"] == "technology"
    upd = h.call("upsert_concept", id="concept:" + cid, description="columnar files")
    assert not upd["created"] and upd["concept"]["name"] == "Parquet"
    assert "description" not in upd["concept"]  # a write does not echo the text back
    assert h.call("get_concept", id=cid)["concept"]["description"] == "columnar files"
    assert h.call("upsert_concept", name="Plain")["concept"]["kind"] == "concept"
    with pytest.raises(InvalidArgument, match="name is required"):
        h.call("upsert_concept", id="new-one", kind="person")
    with pytest.raises(InvalidArgument, match="cannot be null"):
        h.call("upsert_concept", id=cid, name=None)
    with pytest.raises(ValidationError):
        h.call("upsert_concept", name="a\nb")
    with pytest.raises(ValidationError):
        h.call("upsert_concept", name="x", description="d" * 4001)


def test_hierarchy_refuses_self_missing_and_cycles_with_the_path(h: Harness) -> None:
    a = h.concept("A")
    b = h.concept("B", parent_id=a)
    c = h.concept("C", parent_id=b)
    before = h.objects()
    with pytest.raises(Conflict, match="own parent"):
        h.call("upsert_concept", id=a, parent_id=a)
    with pytest.raises(Conflict) as info:
        h.call("upsert_concept", id=a, parent_id=c)
    assert f"{a} -> {c} -> {b} -> {a}" in info.value.message
    with pytest.raises(NotFound):
        h.call("upsert_concept", id=a, parent_id="ghost")
    with pytest.raises(NotFound):
        h.call("upsert_concept", name="D", parent_id="ghost")
    assert h.objects() == before
    got = h.call("get_concept", id=c)
    assert [x["name"] for x in got["ancestors"]] == ["B", "A"]
    assert [x["id"] for x in h.call("get_concept", id=a)["children"]] == [b]
    h.call("upsert_concept", id=b, parent_id=None)  # detach: A no longer above C
    h.call("upsert_concept", id=a, parent_id=c)
    assert [x["name"] for x in h.call("get_concept", id=a)["ancestors"]] == ["C", "B"]


def test_hierarchy_depth_is_bounded(h: Harness) -> None:
    parent = None
    for n in range(MAX_HIERARCHY_DEPTH + 1):
        parent = h.concept(f"level {n}", **({"parent_id": parent} if parent else {}))
    with pytest.raises(InvalidArgument, match="deeper than"):
        h.call("upsert_concept", name="too deep", parent_id=parent)


def test_concurrent_reparenting_never_commits_a_cycle(h: Harness) -> None:
    for _ in range(5):
        a, b = h.concept("A"), h.concept("B")
        one, two = (h.as_agent(f"ag{n}", own_lake=True) for n in range(2))
        results = race(
            functools.partial(one.call, "upsert_concept", id=a, parent_id=b),
            functools.partial(two.call, "upsert_concept", id=b, parent_id=a),
        )
        assert sum(isinstance(r, Conflict) for r in results) == 1
        assert sum(isinstance(r, dict) for r in results) == 1
        parents = {h.call("get_concept", id=x)["concept"].get("parent_id") for x in (a, b)}
        assert None in parents


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


def test_add_episode_links_entity_ids_with_position(h: Harness) -> None:
    c1, c2 = h.concept("one"), h.concept("two")
    out = h.call("add_episode", content="talked about one and two", entity_ids=[c2, "ghost", c1])
    assert out["linked_entities"] == 2
    assert out["failed_entity_ids"] == [{"entity_id": "ghost", "reason": "no concept with this id"}]
    ents = h.call("get_episode", id=out["id"], include_entities=True)["entities"]
    assert [(x["id"], x["position"], x["confidence"]) for x in ents] == [(c2, 0, 1.0), (c1, 2, 1.0)]
    assert h.call("get_concept", id=c1)["episode_ids"] == [out["id"]]


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


def test_find_concepts_filters_and_pages(h: Harness) -> None:
    root = h.concept("Storage", kind="area")
    ids = {
        n: h.concept(n, kind="technology", parent_id=root) for n in ["parquet", "Iceberg", "zstd"]
    }
    h.concept("Alice", kind="person", description="knows parquet well")
    e = h.episode()
    h.call("link_episode_to_concept", episode_id=e, concept_id=ids["zstd"])
    names = [c["name"] for c in h.call("find_concepts", limit=100)["concepts"]]
    assert names == ["Alice", "Iceberg", "parquet", "Storage", "zstd"]
    hits = h.call("find_concepts", query="PARQUET")["concepts"]
    assert [c["name"] for c in hits] == ["Alice", "parquet"]
    assert [c["name"] for c in h.call("find_concepts", kind="person")["concepts"]] == ["Alice"]
    kids = h.call("find_concepts", parent_id=root)["concepts"]
    assert [c["name"] for c in kids] == ["Iceberg", "parquet", "zstd"]
    linked = h.call("find_concepts", episode_id=e)["concepts"]
    assert [(c["name"], c["episode_count"]) for c in linked] == [("zstd", 1)]
    seen, cursor = [], None
    while True:
        page = h.call("find_concepts", limit=2, **({"cursor": cursor} if cursor else {}))
        seen += [c["name"] for c in page["concepts"]]
        if (cursor := page.get("next_cursor")) is None:
            break
    assert seen == names
