"""Bounded embedding per write, and the deferred pass that embeds the rest (issue 10, defect 10).

A write embeds at most Settings.embed_sync_passages passages; the rest of a long episode is
counted as vectors_pending and embedded by memlake.search.backfill in later conditional commits.
A counting wrapper around a fast lexical embedder measures the work (passages embedded), never
wall time. The pass must leave deleted episodes deleted, skip text rewritten under it, and
commit safely next to concurrent writers on other Lake objects (other processes).
"""

from __future__ import annotations

import re
import threading
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlake.config import Settings
from memlake.context import Principal
from memlake.lake import Transaction
from memlake.search import indexing
from memlake.search.backfill import embed_pending
from memlake.search.hybrid import search
from memlake.search.index.backlog import pending_map
from memlake.search.index.passages import plan
from memlake.store.local import LocalStore
from memlake.tools.registry import get_tool
from tests.wiring import bare_lake, indexed_context

from .lambda_helpers import (
    FakeContext,
    functions,
    handler_of,
    import_handler,
    lambda_env,
    load_template,
    resolve_env,
)

T = "acme"
SYNC = 4  # passages a write may embed
TAIL = "lighthouse keeper feeds seagulls at dawn"


class CountingEmbedder:
    """Hashed bag-of-words unit vectors; records how many passages each call embeds.
    `during_embed` runs inside the next embed call (to interleave other writers)."""

    max_tokens = 512

    def __init__(self, name: str = "test-hash", dim: int = 256) -> None:
        self.name, self.dim = name, dim
        self.calls: list[int] = []
        self.during_embed: Callable[[], None] | None = None
        self._lock = threading.Lock()

    @property
    def passages(self) -> int:
        return sum(self.calls)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.calls.append(len(texts))
            hook, self.during_embed = self.during_embed, None
        if hook is not None:
            hook()
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, zlib.crc32(w.encode()) % self.dim] += 1
        out += 1e-6
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def long_content(sections: int = 12, tail: str = TAIL) -> str:
    """~2,000-character sections of filler (one embedder window each), then a tail section."""
    words = [f"filler{i % 40}" for i in range(230)]
    head = "".join(" ".join(words) + f" section{s}.\n" for s in range(sections))
    return head + " ".join([tail] * 40)


class Node:
    """One process's view: its own Lake (own caches, own commit lock) on the shared store."""

    def __init__(self, root: Path, embedder: CountingEmbedder, **settings: Any) -> None:
        cfg = Settings(data_dir=root, embed_sync_passages=SYNC, **settings)
        self.lake = bare_lake(LocalStore(root), dim=embedder.dim)
        self.ctx = indexed_context(Principal(T), self.lake, cfg, embedder)
        self.emb, self.root = embedder, root

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        spec = get_tool(tool)
        assert spec is not None
        return spec.run(self.ctx, spec.input_model.model_validate(args)).model_dump(mode="json")  # type: ignore[no-any-return]

    def search(self, query: str) -> dict[str, dict[str, Any]]:
        """id -> score breakdown of every hit (each episode at most once)."""
        hits = search(self.lake, self.ctx.services.search, T, query=query, limit=50, recency=False)
        assert len({h.id for h in hits}) == len(hits), "an episode was indexed twice"
        return {h.id: h.breakdown for h in hits}

    def keyword_hits(self, query: str) -> set[str]:
        return {i for i, b in self.search(query).items() if b["bm25_rank"] is not None}

    def pending(self) -> dict[str, int]:
        return pending_map(self.lake.snapshot(T))

    def chunks(self, episode_id: str) -> dict[str, Any] | None:
        return self.lake.snapshot(T).table(indexing.CHUNKS_TABLE).get(episode_id)


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path, CountingEmbedder())


def passages_of(node: Node, content: str) -> int:
    return len(plan({"content": content}, node.emb))


def test_a_long_write_embeds_only_the_sync_budget_and_reports_the_rest(node: Node) -> None:
    # GIVEN content of more passages than a write may embed
    content = long_content()
    total = passages_of(node, content)
    assert total > SYNC * 2
    # WHEN it is added
    added = node.call("add_episode", content=content)
    # THEN exactly SYNC passages were embedded, and the rest is reported pending everywhere
    assert node.emb.passages == SYNC
    assert added["vectors_pending"] == total - SYNC
    assert node.call("get_episode", id=added["id"])["vectors_pending"] == total - SYNC
    assert node.pending() == {added["id"]: total - SYNC}
    chunks = node.chunks(added["id"])
    assert chunks is not None and len(chunks["starts"]) == total and len(chunks["vectors"]) == SYNC
    # a short one is embedded whole and reports nothing pending
    short = node.call("add_episode", content="a short note about the garden")
    assert short.get("vectors_pending", 0) == 0 and node.emb.passages == SYNC + 1


def test_search_finds_a_pending_episode_by_bm25_then_by_vector_after_the_pass(
    node: Node,
) -> None:
    # GIVEN a long episode whose only mention of the query is in its unembedded tail
    long_id = node.call("add_episode", content=long_content())["id"]
    node.call("add_episode", content="notes on the quarterly budget review")
    before = node.search(TAIL)[long_id]
    assert before["bm25_rank"] == 1  # keyword search covers the whole content at once
    assert before["vector_score"] < 0.5  # the embedded passages are filler
    # WHEN the deferred pass runs (bounded per run: two runs of 8 passages, then the rest)
    calls = node.emb.passages
    first = embed_pending(node.lake, node.ctx.services.search, T, max_passages=8, batch=8)
    assert (first.passages, node.emb.passages - calls) == (8, 8)
    assert node.call("get_episode", id=long_id)["vectors_pending"] == first.left > 0
    rest = embed_pending(node.lake, node.ctx.services.search, T, max_passages=1_000, batch=8)
    # THEN nothing is pending and the tail is found by meaning
    assert rest.left == 0 and node.pending() == {}
    assert node.call("get_episode", id=long_id).get("vectors_pending", 0) == 0
    after = node.search(TAIL)[long_id]
    assert after["vector_rank"] == 1 and after["vector_score"] > 0.9
    # and a fresh process reads the same (vectors are in the lake, not in memory)
    fresh = Node(node.root, CountingEmbedder())
    assert fresh.search(TAIL)[long_id]["vector_score"] > 0.9
    # the pass is idempotent: nothing left, nothing committed
    version = node.lake.snapshot(T).version
    assert embed_pending(node.lake, node.ctx.services.search, T, max_passages=1_000).commits == 0
    assert node.lake.snapshot(T).version == version


def _gone(node: Node, episode_id: str) -> None:
    assert episode_id not in [e["id"] for e in node.call("list_episodes", limit=50)["episodes"]]
    assert episode_id not in node.search(TAIL)
    assert node.chunks(episode_id) is None and episode_id not in node.pending()
    with pytest.raises(Exception, match="not found"):
        node.call("get_episode", id=episode_id)


def test_a_delete_before_the_pass_is_not_undone(node: Node) -> None:
    episode_id = node.call("add_episode", content=long_content())["id"]
    node.call("delete_episode", id=episode_id)
    calls = node.emb.passages
    report = embed_pending(node.lake, node.ctx.services.search, T, max_passages=1_000)
    assert report.commits == 0 and node.emb.passages == calls  # nothing to do, nothing embedded
    _gone(node, episode_id)


def test_a_delete_while_the_pass_embeds_is_not_undone(tmp_path: Path) -> None:
    # GIVEN a pending episode, and another process that deletes it while the pass embeds
    writer = Node(tmp_path, CountingEmbedder())
    episode_id = writer.call("add_episode", content=long_content())["id"]
    maintainer = Node(tmp_path, CountingEmbedder())
    maintainer.emb.during_embed = lambda: writer.call("delete_episode", id=episode_id)
    # WHEN the pass commits the vectors it computed
    report = embed_pending(
        maintainer.lake, maintainer.ctx.services.search, T, max_passages=1_000, batch=8
    )
    # THEN its conditional commit saw the delete: the episode stays deleted everywhere
    assert maintainer.emb.calls and report.passages == 0
    _gone(maintainer, episode_id)
    _gone(Node(tmp_path, CountingEmbedder()), episode_id)


def test_the_pass_skips_text_rewritten_under_it(tmp_path: Path) -> None:
    writer = Node(tmp_path, CountingEmbedder())
    episode_id = writer.call("upsert_episode", events=long_content())["id"]
    maintainer = Node(tmp_path, CountingEmbedder())
    new_tail = "orchard apples harvested in october"
    new_text = long_content(sections=6, tail=new_tail)
    maintainer.emb.during_embed = lambda: writer.call(
        "upsert_episode", id=episode_id, events=new_text
    )
    embed_pending(maintainer.lake, maintainer.ctx.services.search, T, max_passages=8, batch=8)
    # the rewrite's own (bounded) vectors stand; the pass did not put the old text's back
    chunks = maintainer.chunks(episode_id)
    assert chunks is not None and len(chunks["vectors"]) == SYNC
    assert maintainer.pending() == {episode_id: passages_of(writer, new_text) - SYNC}
    # and the next run completes the new text
    embed_pending(maintainer.lake, maintainer.ctx.services.search, T, max_passages=1_000)
    hits = maintainer.search(new_tail)
    assert hits[episode_id]["vector_score"] > 0.9
    assert TAIL not in maintainer.call("get_episode", id=episode_id)["content"]


def test_the_pass_commits_next_to_concurrent_writers(tmp_path: Path) -> None:
    # GIVEN two pending episodes and writers in other processes adding and updating episodes
    writer = Node(tmp_path, CountingEmbedder())
    long_ids = [writer.call("add_episode", content=long_content())["id"] for _ in range(2)]
    maintainer = Node(tmp_path, CountingEmbedder())
    added: list[str] = []
    errors: list[BaseException] = []

    def write(n: int) -> None:
        node = Node(tmp_path, CountingEmbedder())
        try:
            for i in range(6):
                added.append(node.call("add_episode", content=f"writer{n} note{i} kiwi")["id"])
            # a metadata-only update of a pending episode: same text, new row version
            node.call("upsert_episode", id=long_ids[n], tags=[f"tag{n}"])
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]

    def start_writers() -> None:
        for t in threads:
            t.start()

    maintainer.emb.during_embed = start_writers
    # WHEN the pass runs while they write
    embed_pending(maintainer.lake, maintainer.ctx.services.search, T, max_passages=10_000, batch=4)
    for t in threads:
        t.join()
    embed_pending(maintainer.lake, maintainer.ctx.services.search, T, max_passages=10_000, batch=4)
    # THEN every acknowledged write is there once, and the long ones are fully embedded
    assert not errors
    assert maintainer.keyword_hits("kiwi") == set(added) and len(added) == 12
    assert maintainer.pending() == {}
    assert maintainer.keyword_hits(TAIL) == set(long_ids)
    tail = maintainer.search(TAIL)  # each episode once (search asserts it): no stale copy
    assert all(tail[i]["vector_score"] > 0.9 for i in long_ids)
    for i, episode_id in enumerate(long_ids):
        got = maintainer.call("get_episode", id=episode_id)
        assert got["tags"] == [f"tag{i}"] and got.get("vectors_pending", 0) == 0


def test_every_write_path_is_bounded(node: Node) -> None:
    # upsert_episode: new text is bounded like add_episode
    created = node.call("upsert_episode", events=long_content())
    total = passages_of(node, long_content())
    assert node.emb.passages == SYNC and created["vectors_pending"] == total - SYNC
    # an update that keeps the text embeds nothing and reports what is still pending
    kept = node.call("upsert_episode", id=created["id"], platform="claude")
    assert node.emb.passages == SYNC and kept["vectors_pending"] == total - SYNC
    # an import-like batch (rows staged without vectors, many per commit) is bounded per commit
    rows = [{"id": f"imported{i}", "content": long_content(tail=f"x{i}")} for i in range(5)]

    def change(txn: Transaction) -> None:
        for row in rows:
            txn.put("episodes", row)

    node.lake.commit(T, change)
    assert node.emb.passages == 2 * SYNC  # 5 long episodes, one budget
    assert {row["id"] for row in rows} <= set(node.pending())
    embed_pending(node.lake, node.ctx.services.search, T, max_passages=10_000)
    assert node.pending() == {}
    for i, row in enumerate(rows):
        assert node.search(f"x{i} lighthouse")[row["id"]]["vector_score"] > 0.5


def test_the_scheduled_maintenance_function_embeds_what_writes_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the functions' environment from template.yaml (MiniLM, moto S3), 4 passages a write
    template = load_template()
    fns = functions(template)
    env = {**resolve_env(template, fns["AddEpisodeFunction"]), "MEMLAKE_EMBED_SYNC_PASSAGES": "4"}

    def fn(name: str) -> Any:
        return import_handler(handler_of(fns[name]))

    with lambda_env(monkeypatch, env):
        added = fn("AddEpisodeFunction")(
            {"tenant": T, "arguments": {"content": long_content()}}, FakeContext()
        )
        assert added["vectors_pending"] > 20
        # WHEN the scheduled maintenance function runs
        report = fn("MaintenanceFunction")({"detail-type": "Scheduled Event"}, FakeContext())
        # THEN it embedded every pending passage, and the tool functions see it
        assert report["failed"] == [] and report["passages_embedded"] == added["vectors_pending"]
        got = fn("GetEpisodeFunction")({"tenant": T, "arguments": {"id": added["id"]}}, None)
        assert got.get("vectors_pending", 0) == 0
        found = fn("SearchEpisodesFunction")({"tenant": T, "arguments": {"query": TAIL}}, None)
        assert found["episodes"][0]["id"] == added["id"]


def test_an_import_embeds_within_the_budget_and_takes_the_exported_vectors(
    tmp_path: Path,
) -> None:
    from memlake.transfer import export_tenant, import_tenant

    # GIVEN an export of fully embedded long episodes (export writes episodes, then chunks)
    source = Node(tmp_path / "a", CountingEmbedder())
    tails = [f"{TAIL} y{i}" for i in range(3)]
    ids = [source.call("add_episode", content=long_content(tail=t))["id"] for t in tails]
    embed_pending(source.lake, source.ctx.services.search, T, max_passages=10_000)
    dump = tmp_path / "dump.jsonl"
    with dump.open("wb") as out:
        export_tenant(source.lake, T, out, progress=False)
    # WHEN it is imported in batches that put the episodes before their vectors
    target = Node(tmp_path / "b", CountingEmbedder())
    report = import_tenant(target.lake, T, dump, batch_size=2, progress=False)
    # THEN each commit embedded at most the write budget, and the exported vectors completed
    # the index: nothing pending, every tail found by meaning
    assert target.emb.passages <= SYNC * report.commits
    assert target.pending() == {}
    for tail, episode_id in zip(tails, ids, strict=True):
        assert target.search(tail)[episode_id]["vector_score"] > 0.9
        assert target.call("get_episode", id=episode_id).get("vectors_pending", 0) == 0


def test_an_export_with_pending_vectors_imports_and_stays_pending(tmp_path: Path) -> None:
    from memlake.transfer import export_tenant, import_tenant

    # GIVEN an export taken while a long episode still has passages to embed
    source = Node(tmp_path / "a", CountingEmbedder())
    added = source.call("add_episode", content=long_content())
    left = added["vectors_pending"]
    assert left > 0
    dump = tmp_path / "dump.jsonl"
    with dump.open("wb") as out:
        export_tenant(source.lake, T, out, progress=False)
    # WHEN it is imported elsewhere
    target = Node(tmp_path / "b", CountingEmbedder())
    import_tenant(target.lake, T, dump, batch_size=2, progress=False)
    # THEN the same passages are pending there, and the deferred pass finishes them
    assert target.pending() == {added["id"]: left}
    assert target.call("get_episode", id=added["id"])["vectors_pending"] == left
    embed_pending(target.lake, target.ctx.services.search, T, max_passages=10_000)
    assert target.call("get_episode", id=added["id"]).get("vectors_pending", 0) == 0
    assert target.search(TAIL)[added["id"]]["vector_score"] > 0.9


def test_an_episode_that_cannot_be_embedded_does_not_block_the_others(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlake.search import backfill

    # GIVEN two long episodes pending, the older of which always fails to embed
    first = node.call("add_episode", content=long_content(tail="alpha tail"))["id"]
    second = node.call("add_episode", content=long_content(tail="beta tail"))["id"]
    real = backfill._plan

    def planned(svc: Any, snap: Any, episode_id: str, n: int) -> Any:
        if episode_id == first:
            raise ValueError("a broken stored row")
        return real(svc, snap, episode_id, n)

    monkeypatch.setattr(backfill, "_plan", planned)
    # WHEN the pass runs
    embed_pending(node.lake, node.ctx.services.search, T, max_passages=10_000)
    # THEN the other one is done, and the broken one is still pending for a later run
    assert set(node.pending()) == {first}
    assert node.call("get_episode", id=second).get("vectors_pending", 0) == 0
