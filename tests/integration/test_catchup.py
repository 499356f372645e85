"""The index catches up with the deferred pass in batches (memlake.search.catchup, decision 2503):
a shard is rebuilt when enough vectors wait for it or nothing more is coming, outside the commit
lock, and swapped in only onto the shard it was built from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memlake.errors import InvalidArgument
from memlake.ids import new_id
from memlake.lake import Transaction
from memlake.search import catchup
from memlake.search.backfill import embed_pending
from memlake.search.index import backlog
from memlake.search.index.backlog import BACKLOG_TABLE, pending_map
from memlake.search.index.layout import Layout
from memlake.search.index.state import EXTRA_KEY, SearchState, ShardInfo
from memlake.timeutil import now
from memlake.transfer import import_tenant

from .test_deferred_vectors import SYNC, TAIL, CountingEmbedder, Node, long_content

T = "acme"


def info(chunks: int) -> ShardInfo:
    return ShardInfo("k", 10, chunks, 0, (1, 1), (0, 0), None, False)


def test_a_shard_is_due_when_enough_waits_or_nothing_more_comes() -> None:
    big = info(8_000)
    assert not catchup.due(big, 999, more_coming=True)  # < 1/8 of what it holds
    assert catchup.due(big, 1_000, more_coming=True)
    assert catchup.due(big, 1, more_coming=False)  # the last vectors of its episodes
    assert not catchup.due(big, 0, more_coming=False)


def state(node: Node) -> SearchState:
    got = SearchState.from_extra(node.lake.snapshot(T).extra)
    assert got is not None
    return got


def test_steps_record_vectors_and_the_index_takes_them_when_due(tmp_path: Path) -> None:
    # GIVEN a long episode among many short ones, and a pass that embeds a few passages a run
    node = Node(tmp_path, CountingEmbedder())
    for i in range(40):
        node.call("add_episode", content=f"short note {i} about gardening and tomatoes")
    long_id = node.call("add_episode", content=long_content(sections=40))["id"]
    total = node.call("get_episode", id=long_id)["vectors_pending"] + SYNC
    key = state(node).shards[-1].key
    # WHEN a run embeds 4 passages: fewer than 1/8 of the shard's vectors, and more to come
    report = embed_pending(node.lake, node.ctx.services.search, T, max_passages=4, batch=4)
    # THEN they are stored but the shard was not rebuilt, and the episode reports them pending
    assert report.passages == 4 and report.indexed.shards == 0 and report.indexed.waiting == 1
    assert state(node).shards[-1].key == key
    (entry,) = backlog.read_all(node.lake.snapshot(T))
    assert (entry.passages, entry.embedded, entry.indexed) == (total, SYNC + 4, SYNC)
    assert node.call("get_episode", id=long_id)["vectors_pending"] == total - SYNC
    # WHEN the rest is embedded
    report = embed_pending(node.lake, node.ctx.services.search, T, max_passages=1_000, batch=8)
    # THEN one rebuild took every new vector, and the tail is found by meaning
    assert report.indexed.shards == 1 and report.indexed.episodes == 1 and report.left == 0
    assert state(node).shards[-1].key != key
    assert node.search(TAIL)[long_id]["vector_score"] > 0.9
    assert node.call("get_episode", id=long_id).get("vectors_pending", 0) == 0
    assert backlog.read_all(node.lake.snapshot(T)) == []


def test_a_write_into_the_tail_during_its_rebuild_wins_and_the_next_run_swaps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN two long episodes in the tail, embedded but not indexed yet
    node = Node(tmp_path, CountingEmbedder())
    ids = [node.call("add_episode", content=long_content())["id"] for _ in range(2)]
    monkeypatch.setattr(catchup, "due", lambda *a, **k: False)
    embed_pending(node.lake, node.ctx.services.search, T, max_passages=1_000)
    monkeypatch.undo()
    writer = Node(tmp_path, CountingEmbedder())
    real = Layout.rebuild
    added = []

    def rebuild(self: Layout, info: ShardInfo, docs: list[Any]) -> ShardInfo:
        built = real(self, info, docs)
        added.append(writer.call("add_episode", content="a note written meanwhile")["id"])
        return built

    monkeypatch.setattr(Layout, "rebuild", rebuild)
    # WHEN the catch-up built the tail from a snapshot the write has since replaced
    report = catchup.catch_up(node.lake, node.ctx.services.search, T)
    # THEN nothing was swapped (the write's tail stands), and the next run swaps
    assert report.shards == 0 and report.waiting == 1
    monkeypatch.undo()
    assert catchup.catch_up(node.lake, node.ctx.services.search, T).shards == 1
    fresh = Node(tmp_path, CountingEmbedder())
    assert fresh.search("written meanwhile").keys() >= set(added)
    assert all(fresh.search(TAIL)[i]["vector_score"] > 0.9 for i in ids)
    assert pending_map(fresh.lake.snapshot(T)) == {}


def test_a_sealed_shard_keeps_deaths_that_landed_during_its_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a sealed shard (the tail moved on) holding two long episodes with vectors waiting
    node = Node(tmp_path, CountingEmbedder())
    for i in range(8):  # so that one death does not pass the purge threshold
        node.call("add_episode", content=f"short note {i}")
    ids = [node.call("add_episode", content=long_content())["id"] for _ in range(2)]
    monkeypatch.setattr(catchup, "due", lambda *a, **k: False)
    embed_pending(node.lake, node.ctx.services.search, T, max_passages=1_000)
    monkeypatch.undo()

    def seal(txn: Transaction) -> None:  # what a full tail becomes: tail=False, a new tail next
        doc = txn.extra[EXTRA_KEY]
        doc["shards"][-1]["tail"] = False

    node.lake.commit(T, seal)
    node.call("add_episode", content="a short note in the new tail")
    assert [s.tail for s in state(node).shards] == [False, True]
    writer = Node(tmp_path, CountingEmbedder())
    real = Layout.rebuild

    def rebuild(self: Layout, info: ShardInfo, docs: list[Any]) -> ShardInfo:
        built = real(self, info, docs)
        writer.call("delete_episode", id=ids[0])  # marks it dead in the sealed shard
        return built

    monkeypatch.setattr(Layout, "rebuild", rebuild)
    # WHEN the catch-up swaps the rebuilt sealed shard in
    report = catchup.catch_up(node.lake, node.ctx.services.search, T)
    # THEN the death that landed meanwhile is carried into the new shard
    assert report.shards == 1
    assert state(node).shards[0].dead == (ids[0],)
    fresh = Node(tmp_path, CountingEmbedder())
    hits = fresh.search(TAIL)
    assert ids[0] not in hits and hits[ids[1]]["vector_score"] > 0.9


def test_a_state_with_the_old_pending_map_is_read_and_adopted(tmp_path: Path) -> None:
    # GIVEN a pending episode as a store written before the backlog table holds it
    node = Node(tmp_path, CountingEmbedder())
    long_id = node.call("add_episode", content=long_content())["id"]
    left = node.call("get_episode", id=long_id)["vectors_pending"]

    def to_old_format(txn: Transaction) -> None:
        txn.delete(BACKLOG_TABLE, long_id)
        txn.extra[EXTRA_KEY]["pending"] = {long_id: left}

    node.lake.commit(T, to_old_format)
    assert backlog.read_all(node.lake.snapshot(T)) == []
    # THEN it is reported from the map, a write of another episode keeps the map
    assert node.call("get_episode", id=long_id)["vectors_pending"] == left
    node.call("add_episode", content="another note")
    assert pending_map(node.lake.snapshot(T)) == {long_id: left}
    # and the pass moves it into the table and finishes it
    report = embed_pending(node.lake, node.ctx.services.search, T, max_passages=1_000)
    assert report.passages == left and report.left == 0
    assert "pending" not in node.lake.snapshot(T).extra[EXTRA_KEY]
    assert node.search(TAIL)[long_id]["vector_score"] > 0.9


def test_import_refuses_the_derived_backlog_table(tmp_path: Path) -> None:
    node = Node(tmp_path / "lake", CountingEmbedder())
    line = '{"table": "vector_backlog", "row": {"id": "01M8C2JMCC9QVRDRXW07KMKWK3"}}\n'
    path = tmp_path / "in.jsonl"
    path.write_text(line)
    with pytest.raises(InvalidArgument, match="unknown table 'vector_backlog'"):
        import_tenant(node.lake, T, path, progress=False)


def test_a_state_change_committed_beside_a_write_is_kept(tmp_path: Path) -> None:
    """The commit hook builds on the transaction's search state: a swap staged by another
    change of the same (group) commit is not overwritten by the write's index update."""
    node = Node(tmp_path, CountingEmbedder())
    node.call("add_episode", content="a first note")

    def seal(txn: Transaction) -> None:
        txn.extra[EXTRA_KEY]["shards"][-1]["tail"] = False

    node.lake.commit(T, seal)

    def swap_and_write(txn: Transaction) -> None:
        txn.extra[EXTRA_KEY]["shards"][0]["time"] = [1, 2]  # what a swap would stage
        at = now()
        row = {"id": new_id(), "content": "a second note", "context": "c"}
        txn.put("episodes", {**row, "created_at": at, "updated_at": at})

    node.lake.commit(T, swap_and_write)
    assert state(node).shards[0].time == (1, 2) and len(state(node).shards) == 2
    assert node.search("second note")
