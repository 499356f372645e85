"""The relationships library under the tools: batched transactions, the stored Parquet read by
DuckDB, labels and the incrementally maintained index (the tools' own tests are in
tests/unit/tools/)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from memlake.errors import AlreadyExists, Conflict
from memlake.ids import new_id
from memlake.lake import Lake, Transaction
from memlake.relationships import NewRelationship, add, relationship_index
from memlake.timeutil import now

from .tools.support import Caller


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
