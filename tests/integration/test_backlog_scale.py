"""1,000 long episodes pending at once (issue 25): the deferred pass stays linear and the manifest
stays small (decision 2503).

Before, each step of the pass committed one episode's longer chunks row and rebuilt the whole
shard holding it in that commit, so N pending episodes in one shard cost N rebuilds of a shard
that grows with N; and the manifest carried a `pending` map with one entry per episode, which
every commit rewrote. Now the backlog is a table and the index catches up in batches
(memlake.search.catchup). The work is measured in bytes of index shards written (a counting
store), never wall time.
"""

from __future__ import annotations

from typing import Any

import pytest

from memlake.episodes import TABLE
from memlake.ids import new_id
from memlake.lake import Transaction
from memlake.search.backfill import embed_pending
from memlake.search.catchup import REINDEX_RATIO
from memlake.search.hybrid import search
from memlake.search.index.backlog import BACKLOG_TABLE, pending_map
from memlake.search.index.state import SearchState
from memlake.search.query.params import SearchParams
from memlake.timeutil import now

from .test_deferred_vectors import CountingEmbedder, Node, long_content

T = "acme"
EPISODES = 1_000
BATCH = 50  # episodes per import commit
IDS = [new_id() for _ in range(EPISODES)]


class CountingPuts:
    """Counts the bytes of index shard objects a store is asked to write."""

    def __init__(self, node: Node) -> None:
        self.bytes = 0
        store = node.lake.store
        real = store.put

        def put(key: str, data: bytes, **kw: Any) -> Any:
            if "/search/" in key:
                self.bytes += len(data)
            return real(key, data, **kw)

        store.put = put  # type: ignore[method-assign]


def shard_bytes(node: Node) -> int:
    state = SearchState.from_extra(node.lake.snapshot(T).extra)
    assert state is not None
    return sum(s.bytes for s in state.shards)


@pytest.fixture(scope="module")
def pending_lake(tmp_path_factory: pytest.TempPathFactory) -> Node:
    """1,000 long episodes imported 50 a commit: each commit embeds 4 passages over all it
    stages, so every episode is left with ~5 passages pending."""
    node = Node(tmp_path_factory.mktemp("backlog"), CountingEmbedder(dim=256))
    for first in range(0, EPISODES, BATCH):

        def change(txn: Transaction, first: int = first) -> None:
            for i in range(first, first + BATCH):
                at = now()
                txn.put(
                    TABLE,
                    {
                        "id": IDS[i],
                        "content": long_content(sections=4, tail=f"lighthouse{i} keeper{i}"),
                        "context": "bulk",
                        "created_at": at,
                        "updated_at": at,
                        "started_at": at,
                    },
                )

        node.lake.commit(T, change)
    return node


def test_a_thousand_pending_episodes_leave_the_manifest_small(pending_lake: Node) -> None:
    snap = pending_lake.lake.snapshot(T)
    pending = pending_map(snap)
    assert len(pending) == EPISODES and min(pending.values()) >= 4
    text = snap.manifest.to_bytes().decode()
    # no per-episode entry: the backlog is a table whose segments the manifest names (an id
    # appears only as a segment's first or last)
    segments = sum(len(refs) for refs in snap.manifest.tables.values())
    assert sum(episode_id in text for episode_id in IDS) <= 2 * segments < EPISODES // 4
    assert "pending" not in (snap.extra.get("search") or {})
    assert len(snap.manifest.tables[BACKLOG_TABLE]) <= EPISODES // BATCH
    # get_episode answers from the table
    got = pending_lake.call("get_episode", id=IDS[500])
    assert got["vectors_pending"] == pending[IDS[500]]


def test_the_pass_over_a_thousand_pending_episodes_is_linear(pending_lake: Node) -> None:
    node = pending_lake
    written = CountingPuts(node)
    embedded_before = node.emb.passages
    left = sum(pending_map(node.lake.snapshot(T)).values())
    runs = 0
    # WHEN the pass runs as memlake serve's tick does: one batch of 256 passages per run
    while pending_map(node.lake.snapshot(T)):
        embed_pending(node.lake, node.ctx.services.search, T, max_passages=256, batch=256)
        runs += 1
        assert runs <= left // 256 + 5, "the pass stopped making progress"
    # THEN every passage was embedded once
    assert node.emb.passages - embedded_before == left
    # and the index shards it wrote add up to a few times the final index, not a rebuild of a
    # growing shard per episode (~1,000 per shard before: hundreds of times the final index)
    final = shard_bytes(node)
    print(f"shard bytes written {written.bytes:,}, final index {final:,}, {runs} runs")
    assert written.bytes <= (REINDEX_RATIO + 2) * final, (written.bytes, final)
    # every episode's last passage is found by meaning
    ctx = node.ctx
    for i in (0, 137, 512, 999):
        hits = search(
            node.lake,
            ctx.services.search,
            T,
            query=f"lighthouse{i} keeper{i}",
            limit=10,
            recency=False,
            params=SearchParams(weights={"bm25": 0.0, "vector": 1.0}),
        )
        found = {h.id: h.breakdown["vector_score"] for h in hits}  # (hashed words may collide)
        assert found.get(IDS[i], 0) > 0.99, i
        assert node.call("get_episode", id=IDS[i]).get("vectors_pending", 0) == 0
    # and the backlog is empty, its table compactable to nothing
    assert pending_map(node.lake.snapshot(T)) == {}
