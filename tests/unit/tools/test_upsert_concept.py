"""upsert_concept: create, partial update, the hierarchy (self, missing, cycles, depth, races)."""

from __future__ import annotations

import functools

import pytest
from pydantic import ValidationError

from memlake.errors import Conflict, InvalidArgument, NotFound
from memlake.layers.fields import MAX_HIERARCHY_DEPTH

from .support import Harness, race


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
