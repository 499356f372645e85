"""Relationship storage and validation through the tool layer on a local lake: existence,
self-links, duplicates, cycles (also inside one batched transaction), removal, the
episode-delete cascade, tenant isolation, audit records (tool and DuckDB) and bounds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pydantic import ValidationError

from memlake.config import Settings
from memlake.context import Principal
from memlake.errors import AlreadyExists, Conflict, MemlakeError, NotFound
from memlake.ids import new_id
from memlake.lake import Lake, Transaction
from memlake.relationships import NewRelationship, add, relationship_index
from memlake.store.local import LocalStore
from memlake.timeutil import now
from memlake.tools.registry import get_tool
from tests.wiring import bare_lake, tool_context


class Caller:
    """Calls tools the way /mcp does after JSON parsing: validate arguments, then run."""

    def __init__(self, lake: Lake, tenant: str = "t", token_id: str = "tok-a") -> None:
        self.ctx = tool_context(Principal(tenant, token_id), lake, Settings())

    def __call__(self, tool: str, **args: Any) -> dict[str, Any]:
        spec = get_tool(tool)
        assert spec is not None, tool
        out = spec.run(self.ctx, spec.input_model.model_validate(args))
        return out.model_dump(mode="json")  # type: ignore[no-any-return]

    def episodes(self, n: int, **fields: Any) -> list[str]:
        return [self("add_episode", content=f"episode {i}", **fields)["id"] for i in range(n)]

    def link(self, a: str, b: str, type_: str = "follows", **args: Any) -> dict[str, Any]:
        return self(
            "add_episode_relationship",
            from_episode_id=a,
            to_episode_id=b,
            relationship_type=type_,
            **args,
        )


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return bare_lake(LocalStore(tmp_path))


@pytest.fixture
def call(lake: Lake) -> Caller:
    return Caller(lake)


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


def _new(a: str, b: str, type_: str = "follows") -> NewRelationship:
    return NewRelationship(new_id(), a, b, type_, 1.0, None, now(), "tok")


def test_changes_batched_in_one_transaction_see_each_other(lake: Lake, call: Caller) -> None:
    """Group commit runs writers as children of one transaction: the second must see the first."""
    a, b = call.episodes(2)
    txn = Transaction(lake.snapshot("t"))
    first = txn.child()
    add(first, _new(a, b))
    first.merge_into_parent()
    second = txn.child()
    with pytest.raises(Conflict):
        add(second, _new(b, a, "causes"))
    with pytest.raises(AlreadyExists):
        add(txn.child(), _new(a, b))
    # a staged removal frees the key and breaks the cycle for later writers in the batch
    third = txn.child()
    [staged_id] = [rid for rid, _ in third.staged_rows("relationships")]
    third.delete("relationships", staged_id)
    add(third, _new(b, a))


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


def test_delete_episode_removes_its_relationships_in_the_same_commit(
    lake: Lake, call: Caller
) -> None:
    a, b, c = call.episodes(3)
    call.link(a, b)
    call.link(b, c, "causes")
    keep = call.link(a, c, "related_to")["relationship_id"]
    before = lake.snapshot("t").version
    assert call("delete_episode", id=b)["deleted"] == 1
    snap = lake.snapshot("t")
    assert snap.version == before + 1  # episode, relationships and audit in one manifest
    assert set(relationship_index(snap).rows) == {keep}
    assert [r["id"] for r in call("get_episode_relationships", episode_id=a)["relationships"]] == [
        keep
    ]
    log = call("get_audit_log", action="cascade_delete")["records"]
    assert len(log) == 2 and {r["token_id"] for r in log} == {"tok-a"}
    assert all(r["details"]["deleted_episode_id"] == b for r in log)
    with pytest.raises(NotFound):
        call.link(a, b)


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


def test_audit_records_every_change_newest_first_with_paging(call: Caller) -> None:
    a, b, c = call.episodes(3)
    r1 = call.link(a, b, strength=0.5)["relationship_id"]
    r2 = call.link(b, c, "causes")["relationship_id"]
    call("remove_episode_relationship", relationship_id=r1)
    log = call("get_audit_log")["records"]
    assert [(r["action"], r["relationship_id"]) for r in log] == [
        ("remove_relationship", r1),
        ("add_relationship", r2),
        ("add_relationship", r1),
    ]
    assert log[2]["details"] == {"strength": 0.5, "metadata": {}}
    assert {r["tenant"] for r in log} == {"t"} and {r["token_id"] for r in log} == {"tok-a"}
    first = call("get_audit_log", limit=2)
    second = call("get_audit_log", limit=2, cursor=first.get("next_cursor"))
    assert [r["id"] for r in first["records"] + second["records"]] == [r["id"] for r in log]
    assert second.get("next_cursor") is None
    assert [r["relationship_id"] for r in call("get_audit_log", relationship_id=r1)["records"]] == [
        r1,
        r1,
    ]
    assert len(call("get_audit_log", episode_id=c)["records"]) == 1
    with pytest.raises(MemlakeError, match="cursor"):
        call("get_audit_log", cursor="not-a-cursor")
    with pytest.raises(MemlakeError, match="other filters"):
        call("get_audit_log", cursor=first.get("next_cursor"), episode_id=a)


def test_audit_and_relationships_are_readable_by_duckdb(
    tmp_path: Path, lake: Lake, call: Caller
) -> None:
    a, b = call.episodes(2)
    rel = call.link(a, b, strength=0.75, metadata={"k": "v"})["relationship_id"]
    call("remove_episode_relationship", relationship_id=rel)
    manifest = lake.snapshot("t").manifest
    con = duckdb.connect()
    audit_files = [str(tmp_path / s.key) for s in manifest.segments("audit")]
    rows = con.execute(
        f"SELECT action, tenant, token_id, relationship_id, from_id, to_id, type,"
        f" json_extract(details, '$.strength')::DOUBLE, typeof(created_at)"
        f" FROM read_parquet({audit_files!r}) ORDER BY id"
    ).fetchall()
    assert rows == [
        ("add_relationship", "t", "tok-a", rel, a, b, "follows", 0.75, "TIMESTAMP WITH TIME ZONE"),
        (
            "remove_relationship",
            "t",
            "tok-a",
            rel,
            a,
            b,
            "follows",
            0.75,
            "TIMESTAMP WITH TIME ZONE",
        ),
    ]
    rel_files = [str(tmp_path / s.key) for s in manifest.segments("relationships")]
    live = con.execute(
        f"""SELECT count(*) FROM (
              SELECT *, row_number() OVER (PARTITION BY id ORDER BY filename DESC) AS rn
              FROM read_parquet({rel_files!r}, filename = true))
            WHERE rn = 1 AND NOT _deleted"""
    ).fetchone()
    assert live == (0,)
    [(meta,)] = con.execute(
        f"SELECT metadata FROM read_parquet({rel_files!r}) WHERE NOT _deleted"
    ).fetchall()
    assert json.loads(meta) == {"k": "v"}


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


def test_dependency_graph_caps_mermaid_at_500_edges(lake: Lake, call: Caller) -> None:
    ids = call.episodes(24)
    pairs = [(a, b) for a in ids for b in ids if a != b][:520]

    def change(txn: Transaction) -> None:
        for a, b in pairs:  # written directly: 520 adds through the tool take a while
            row = {"id": new_id(), "from_id": a, "to_id": b, "type": "related_to"}
            txn.put("relationships", {**row, "strength": 0.5, "created_at": now()})

    lake.commit("t", change)
    mermaid = call("get_dependency_graph", format="mermaid", max_nodes=500)
    assert mermaid["edge_count"] == 500 and mermaid["edges_truncated"] is True
    assert "Mermaid renders at most 500 edges" in mermaid["message"]
    assert mermaid["graph"].count(" -->|") == 500
    dot = call("get_dependency_graph", format="graphviz", max_nodes=500)
    assert dot["edge_count"] == 520 and dot["edges_truncated"] is False
    assert dot["node_count"] == 24 and dot["truncated"] is False


def test_labels_prefer_title_then_summary_then_content() -> None:
    from memlake.relationships.views import label_of

    assert label_of("T", "S", "C") == "T"
    assert label_of(None, "  line1\nline2 ", "C") == "line1\nline2"
    assert label_of("", "   ", "  first   words\n\tnext ") == "first words next"
    long = label_of(None, None, "word " * 40)
    assert len(long) == 80 and long.endswith("…")
    assert len(label_of(None, "s" * 500, None)) == 200


def test_index_follows_appends_and_tail_compactions_without_a_rebuild(
    lake: Lake, call: Caller
) -> None:
    from memlake.lake.compaction import compact
    from memlake.relationships.index import _build

    e = call.episodes(5)
    first = call.link(e[0], e[1])["relationship_id"]
    call.link(e[1], e[2])
    compact(lake, "t", min_segments=2)  # one 2-row segment at the head
    base = relationship_index(lake.snapshot("t"))
    gone = call.link(e[2], e[3])["relationship_id"]
    call.link(e[3], e[4], "related_to")
    call("remove_episode_relationship", relationship_id=gone)
    appended = relationship_index(lake.snapshot("t"))
    assert appended.rows[first] is base.rows[first]  # derived, not rebuilt
    compact(lake, "t", target_rows=2, min_segments=2)  # merges the tail only
    snap = lake.snapshot("t")
    keys = [s.key for s in snap.manifest.segments("relationships")]
    assert len(keys) == 2 and keys[0] == base.segment_keys[0]
    after = relationship_index(snap)
    assert after.rows[first] is base.rows[first]  # the compacted tail was re-applied
    rebuilt = _build(snap.version, snap.table("relationships"), None)
    assert after.rows == rebuilt.rows and gone not in after.rows
    assert after.out == rebuilt.out and after.inc == rebuilt.inc and after.keys == rebuilt.keys
