"""Listings answer what is readable when a segment is damaged, and say so (issue 47, revisiting
decision 2701): list_episodes, find_episodes, find_concepts and get_pending_threads return the
rows of the readable segments with an `unreadable` note naming how many segments of which
table and what repairs them. A read of one row the damaged segment may hold still fails with
corrupt_object, and a transient store error still fails the listing (it is not damage)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memlake.context import Principal
from memlake.errors import StorageError
from memlake.lake import Lake
from memlake.mcp.dispatch import call_tool
from memlake.store.faults import Fault, FaultyStore
from memlake.store.local import LocalStore
from tests.wiring import bare_lake, tool_context

T = "t"


def call(lake: Lake, tool: str, **arguments: Any) -> tuple[dict[str, Any] | None, Any]:
    outcome = call_tool({"name": tool, "arguments": arguments}, tool_context(Principal(T), lake))
    return outcome.structured, outcome.error


def ok(lake: Lake, tool: str, **arguments: Any) -> dict[str, Any]:
    out, err = call(lake, tool, **arguments)
    assert err is None and out is not None, err
    return out


def flip_first_segment(root: Path, lake: Lake, table: str) -> str:
    key = lake.snapshot(T).manifest.tables[table][0].key
    data = bytearray((root / key).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (root / key).write_bytes(bytes(data))
    return key


def fresh(root: Path) -> Lake:
    """A process that did not write the damaged segment (a writer holds what it wrote)."""
    return bare_lake(LocalStore(root))


def test_episodes_listings_answer_the_readable_rows_with_a_note(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    lost, kept = (ok(lake, "add_episode", content=c)["id"] for c in ("alpaca", "beekeeping"))
    flip_first_segment(tmp_path, lake, "episodes")
    reader = fresh(tmp_path)
    for name in ("list_episodes", "find_episodes"):
        out = ok(reader, name)
        assert [e["id"] for e in out["episodes"]] == [kept] and out["count"] == 1
        note = out["unreadable"]
        assert note.startswith("Damaged storage: 1 of 2 segments of episodes"), note
        assert "memlake repair --apply" in note
    out, err = call(reader, "get_episode", id=lost)  # the row itself: a clear error
    assert out is None and err.code == "corrupt_object"


def test_concepts_and_pending_threads_answer_the_readable_rows(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    for name in ("orchard", "vineyard"):
        ok(lake, "upsert_concept", name=name, kind="topic")
    threads = [ok(lake, "add_thread", messages=[{"role": "user", "content": w}]) for w in "ab"]
    flip_first_segment(tmp_path, lake, "concepts")
    flip_first_segment(tmp_path, lake, "threads")
    reader = fresh(tmp_path)
    concepts = ok(reader, "find_concepts")
    assert [c["name"] for c in concepts["concepts"]] == ["vineyard"]
    assert "1 of 2 segments of concepts" in concepts["unreadable"]
    pending = ok(reader, "get_pending_threads")
    assert [t["id"] for t in pending["threads"]] == [threads[1]["id"]]
    assert "1 of 2 segments of threads" in pending["unreadable"]


def test_an_undamaged_lake_sends_no_note(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    ok(lake, "add_episode", content="alpaca")
    for name in ("list_episodes", "find_episodes", "find_concepts", "get_pending_threads"):
        assert "unreadable" not in ok(fresh(tmp_path), name), name


def test_a_transient_store_error_fails_the_listing(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    ok(lake, "add_episode", content="alpaca")
    ok(lake, "add_episode", content="beekeeping")
    key = lake.snapshot(T).manifest.tables["episodes"][0].key
    store = FaultyStore(LocalStore(tmp_path), [Fault("get", key, times=-1)])  # lost answers
    out, err = call(bare_lake(store), "list_episodes")
    assert out is None and err.code == "storage_error" and err.retryable, err
    with pytest.raises(StorageError):
        bare_lake(store).snapshot(T).table("episodes").live_table(partial=True)
