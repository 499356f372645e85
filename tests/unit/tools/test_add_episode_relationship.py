"""add_episode_relationship: existence, self-links, duplicates, argument bounds, cycles among
follows+causes (and validate_no_cycles' answer for them), tenant isolation of the edge tools."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from memlake.errors import AlreadyExists, Conflict, NotFound
from memlake.lake import Lake

from .support import Caller


def test_add_checks_existence_self_links_and_duplicates(call: Caller) -> None:
    a, b = call.episodes(2)
    added = call.link(a, b, strength=0.25, metadata={"why": "same bug"})
    assert added["strength"] == 0.25 and added["relationship_type"] == "follows"
    with pytest.raises(NotFound, match="from_episode_id"):
        call.link("NOPE", b)
    with pytest.raises(NotFound, match="to_episode_id"):
        call.link(a, "NOPE")
    with pytest.raises(ValidationError, match="same episode"):
        call.link(a, "episode:" + a)  # the prefix is stripped before the comparison
    with pytest.raises(AlreadyExists, match=added["relationship_id"]):
        call.link("episode:" + a, b, strength=0.9)
    call.link(a, b, "related_to")  # another type between the same pair is another edge
    call.link(b, a, "related_to")  # loose types may point both ways
    got = call("get_episode_relationships", episode_id=a)
    assert got["total"] == 3
    [first] = [r for r in got["relationships"] if r["id"] == added["relationship_id"]]
    assert first["metadata"] == {"why": "same bug"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"strength": 1.5}, "less than or equal to 1"),
        ({"strength": -0.1}, "greater than or equal to 0"),
        ({"strength": float("nan")}, "finite number"),
        ({"relationship_type": "blocks"}, "follows"),
        ({"metadata": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}}, "deeper"),
        ({"from_episode_id": "../x"}, "not a valid id"),
        ({"extra": 1}, "Extra inputs"),
    ],
)
def test_add_bounds_every_argument(call: Caller, args: dict[str, Any], message: str) -> None:
    a, b = call.episodes(2)
    base = {"from_episode_id": a, "to_episode_id": b, "relationship_type": "follows"}
    with pytest.raises(ValidationError, match=message):
        call("add_episode_relationship", **{**base, **args})


def test_follows_and_causes_stay_acyclic_together(call: Caller) -> None:
    a, b, c, d = call.episodes(4)
    call.link(a, b, "follows")
    call.link(b, c, "causes")
    with pytest.raises(Conflict) as info:
        call.link(c, a, "follows")  # a -> b -> c -> a mixes follows and causes
    assert f"{c} -> {a} -> {b} -> {c}" in info.value.message
    with pytest.raises(Conflict):
        call.link(c, a, "causes")
    call.link(c, a, "related_to")  # loose types may close loops
    call.link(c, a, "refines")
    check = call(
        "validate_no_cycles", from_episode_id=c, to_episode_id=a, relationship_type="causes"
    )
    assert check == {
        "valid": False,
        "cycle_detected": True,
        "cycle_path": [c, a, b, c],
        "message": check["message"],
    }
    ok = call("validate_no_cycles", from_episode_id=a, to_episode_id=d, relationship_type="follows")
    assert ok["valid"] and ok.get("cycle_path") is None
    with pytest.raises(ValidationError, match="nothing to validate"):
        call("validate_no_cycles", from_episode_id=a, to_episode_id=d, relationship_type="part_of")
    with pytest.raises(NotFound):
        call(
            "validate_no_cycles", from_episode_id=a, to_episode_id="x1", relationship_type="follows"
        )


def test_tenants_cannot_reach_each_others_episodes_or_edges(lake: Lake, call: Caller) -> None:
    a, b = call.episodes(2)
    rel = call.link(a, b)["relationship_id"]
    other = Caller(lake, tenant="u", token_id="tok-u")
    (mine,) = other.episodes(1)
    with pytest.raises(NotFound):
        other.link(mine, a)
    with pytest.raises(NotFound):
        other("get_episode_relationships", episode_id=a)
    with pytest.raises(NotFound):
        other("remove_episode_relationship", relationship_id=rel)
    assert other("check_relationship_exists", from_episode_id=a, to_episode_id=b)["exists"] is False
    assert other("get_dependency_graph")["node_count"] == 0
    assert other("get_audit_log")["records"] == []
