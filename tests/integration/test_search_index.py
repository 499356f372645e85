"""Index shards on the lake: layout (tail, seal, merge, purge), updates, deletes, races, models.

A tiny lexical embedder (hashed bag of words) keeps these fast; the MiniLM path is covered by the
end-to-end tests and the quality test.
"""

from __future__ import annotations

import re
import threading
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.errors import ConfigurationError
from memlake.ids import new_id
from memlake.lake import Lake, Transaction
from memlake.search.hybrid import search
from memlake.search.index import layout
from memlake.search.index.state import SearchState
from memlake.store.local import LocalStore
from memlake.tools import delete_episode
from tests.wiring import bare_lake, indexed_context, tool_context

T = "acme"


class HashEmbedder:
    """Unit vectors of hashed words: same words, same direction. Counts what it embeds."""

    max_tokens = 512

    def __init__(self, name: str = "test-hash", dim: int = 64) -> None:
        self.name, self.dim = name, dim
        self.texts: list[str] = []
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.texts.extend(texts)
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, zlib.crc32(w.encode()) % self.dim] += 1
        out += 1e-6
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture
def small_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout, "TAIL_DOCS", 4)
    monkeypatch.setattr(layout, "FANOUT", 2)


def make(root: Path, embedder: Any) -> tuple[Lake, ToolContext]:
    settings = Settings(data_dir=root)
    lake = bare_lake(LocalStore(root), dim=embedder.dim)
    return lake, indexed_context(Principal(T), lake, settings, embedder)


def put(lake: Lake, content: str, episode_id: str | None = None, **extra: Any) -> str:
    row = {"id": episode_id or new_id(), "content": content, "created_at": None, **extra}

    def change(txn: Transaction) -> None:
        txn.put("episodes", row)

    lake.commit(T, change)
    return str(row["id"])


def found(ctx: ToolContext, query: str, **kw: Any) -> list[str]:
    return [
        h.id
        for h in search(
            ctx.lake, ctx.services.search, T, query=query, limit=50, recency=False, **kw
        )
    ]


def state(lake: Lake) -> SearchState:
    st = SearchState.from_extra(lake.snapshot(T).extra)
    assert st is not None
    return st


def test_tail_seals_and_merges_and_every_episode_stays_findable(
    tmp_path: Path, small_layout: None
) -> None:
    emb = HashEmbedder()
    lake, ctx = make(tmp_path, emb)
    ids = [put(lake, f"note number{i} about topic{i % 3}") for i in range(21)]
    st = state(lake)
    # 21 docs: tail of 4 seals into tier 0; two tier-0 merge into a tier 1 (8), two tier 1 into
    # a tier 2 (16) which merges no further (MAX_TIER); then one sealed tier 0 and the tail
    assert [s.docs for s in st.shards] == [16, 4, 1]
    assert [s.tier for s in st.shards] == [2, 0, 0] and [s.tail for s in st.shards][-1]
    seqs = [s.seq for s in st.shards]
    assert seqs[0][0] == 1 and all(a[1] + 1 == b[0] for a, b in zip(seqs, seqs[1:], strict=False))
    assert len(emb.texts) == 21  # rebuilds and merges reused stored vectors
    for i, eid in enumerate(ids):
        assert found(ctx, f"number{i}")[0] == eid
    # a fresh lake on the same store (no cache) reads the shards, finds the same
    lake2, ctx2 = make(tmp_path, HashEmbedder())
    assert found(ctx2, "number7")[0] == ids[7]
    chunks = lake2.snapshot(T).table("episode_chunks")
    assert chunks.count() == 21
    assert chunks.schema.field("vectors").type == pa.list_(pa.list_(pa.float32(), 64))


def test_updates_and_deletes_never_come_back(tmp_path: Path, small_layout: None) -> None:
    emb = HashEmbedder()
    lake, ctx = make(tmp_path, emb)
    ids = [put(lake, f"alpha{i} shared words") for i in range(10)]
    put(lake, "renamed to omega", episode_id=ids[1])  # an update of an episode in a sealed shard
    # (the query names the new text too: an absolute score drops episodes that match nothing)
    hits = search(ctx.lake, ctx.services.search, T, query="alpha1 shared omega", limit=50)
    assert [h.row["content"] for h in hits].count("renamed to omega") == 1
    assert "alpha1 shared words" not in [h.row["content"] for h in hits]  # old version gone
    assert found(ctx, "omega")[0] == ids[1]
    assert found(ctx, "shared words renamed omega").count(ids[1]) == 1

    dctx = tool_context(Principal(T), lake, ctx.settings)
    for i in (2, 3, 4):
        delete_episode.run(dctx, delete_episode.DeleteEpisodeInput(id=ids[i]))
    for i in (2, 3, 4):
        assert ids[i] not in found(ctx, f"alpha{i} shared words")
    # ids[1] now reads "renamed to omega": it no longer matches (no 0.5-scored noise)
    assert set(found(ctx, "shared words")) == set(ids) - {ids[1], ids[2], ids[3], ids[4]}
    st = state(lake)
    assert all(s.docs - len(s.dead) > 0 for s in st.shards)
    # a shard with more than a quarter dead was rebuilt without them on a later write
    put(lake, "one more")
    st = state(lake)
    assert all(not layout.needs_purge(s) for s in st.shards)
    assert ids[2] not in found(ctx, "alpha2") and found(ctx, "alpha5")[0] == ids[5]
    # an unchanged text is not embedded again on update
    before = len(emb.texts)
    put(lake, "alpha5 shared words", episode_id=ids[5], context="moved")
    assert len(emb.texts) == before
    assert found(ctx, "alpha5", context="moved") == [ids[5]]
    assert ids[5] not in found(ctx, "alpha5", context=None)[1:]


def test_filters_are_applied_inside_the_search(tmp_path: Path, small_layout: None) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    many = [put(lake, f"common words {i}", context="big") for i in range(30)]
    rare = put(lake, "common words", context="small")
    # 30 better matches elsewhere cannot crowd out the one allowed row
    assert found(ctx, "common words", context="small") == [rare]
    assert found(ctx, "common words", allowed_ids={many[3], rare}) == sorted(
        [many[3], rare], key=lambda i: found(ctx, "common words").index(i)
    )
    assert found(ctx, "common words", allowed_ids=set()) == []


def test_racing_writers_on_two_lakes_lose_no_document(tmp_path: Path) -> None:
    emb = HashEmbedder()
    lakes = [make(tmp_path, emb)[0] for _ in range(2)]
    ids: list[str] = []
    lock = threading.Lock()

    def writer(lake: Lake, w: int) -> None:
        for i in range(15):
            eid = put(lake, f"writer{w} item{i} token{w}x{i}")
            with lock:
                ids.append(eid)

    threads = [threading.Thread(target=writer, args=(lk, w)) for w, lk in enumerate(lakes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _, ctx = make(tmp_path, HashEmbedder())
    assert set(found(ctx, "writer0 writer1 item")) == set(ids)
    for w in range(2):
        for i in range(15):
            assert len(found(ctx, f"token{w}x{i}")) >= 1
    # a lost race re-ran the hooks against the newer snapshot without re-embedding
    assert len(emb.texts) == len(set(emb.texts)) == 30


def test_another_embedding_model_is_a_clear_error(tmp_path: Path) -> None:
    lake, _ = make(tmp_path, HashEmbedder("model-a"))
    put(lake, "first")
    other, ctx = make(tmp_path, HashEmbedder("model-b"))
    with pytest.raises(ConfigurationError, match="model-a"):
        put(other, "second")
    with pytest.raises(ConfigurationError, match="model-b") as err:
        found(ctx, "first")
    assert "MEMLAKE_EMBEDDER" in err.value.hint


@pytest.fixture
def stubbed_bedrock() -> Iterator[tuple[Any, Any]]:
    import boto3
    from botocore.stub import Stubber

    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def test_search_stack_on_stubbed_bedrock_titan(tmp_path: Path, stubbed_bedrock: Any) -> None:
    import io
    import json

    from botocore.response import StreamingBody

    from memlake.embed.bedrock import BedrockTitanEmbedder
    from memlake.tools import add_episode, search_episodes

    client, stub = stubbed_bedrock
    lexical = HashEmbedder(dim=256)

    def respond(text: str) -> None:
        vec = [float(x) for x in lexical.embed([text])[0]]
        raw = json.dumps({"embedding": vec, "inputTextTokenCount": 5}).encode()
        body = json.dumps({"inputText": text, "dimensions": 256, "normalize": True})
        stub.add_response(
            "invoke_model",
            {"body": StreamingBody(io.BytesIO(raw), len(raw)), "contentType": "application/json"},
            {"modelId": "amazon.titan-embed-text-v2:0", "body": body}
            | {"contentType": "application/json", "accept": "application/json"},
        )

    settings = Settings(data_dir=tmp_path, embedder="bedrock", bedrock_dimensions=256)
    lake = bare_lake(LocalStore(tmp_path), dim=settings.embed_dim)
    titan = BedrockTitanEmbedder(dimensions=256, client=client)
    ctx = indexed_context(Principal(T), lake, settings, titan)
    texts = ["The heron nests by the quarry lake", "Invoices are due on the fifth"]
    ids = []
    for content in texts:
        respond(content)
        ids.append(add_episode.run(ctx, add_episode.AddEpisodeInput(content=content)).id)
    respond("heron quarry")
    out = search_episodes.run(ctx, search_episodes.SearchEpisodesInput(query="heron quarry"))
    assert out.episodes[0].id == ids[0]
    assert out.episodes[0].breakdown.vector_rank == 1 and out.episodes[0].breakdown.bm25_rank == 1
    st = state(lake)
    assert (st.model, st.dim) == (titan.name, 256)


def test_shard_cache_keeps_a_disk_copy_for_the_next_cold_start(
    tmp_path: Path, small_layout: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlake.search.index.cache import ShardCache
    from memlake.store.base import ObjectNotFound

    lake, _ = make(tmp_path / "lake", HashEmbedder())
    for i in range(9):
        put(lake, f"item{i}")
    shard_keys = [s.key for s in state(lake).shards]
    disk = tmp_path / "tmp-cache"
    first = ShardCache(disk_dir=disk)
    first.load_many(lake.store, shard_keys)
    assert first.last.fetched == len(shard_keys) == len(list(disk.glob("*.npz"))) == 2

    class Gone:
        def get(self, key: str) -> bytes:
            raise ObjectNotFound(key)

    second = ShardCache(disk_dir=disk)  # a new process: empty memory, same /tmp
    loaded = second.load_many(Gone(), shard_keys)  # type: ignore[arg-type]
    assert second.last.disk_hits == 2 and second.last.fetched == 0
    assert [s.n for s in loaded] == [s.docs for s in state(lake).shards]

    monkeypatch.setattr("memlake.search.index.cache.DISK_BYTES", 1)
    ShardCache(disk_dir=tmp_path / "small").load_many(lake.store, shard_keys)
    assert len(list((tmp_path / "small").glob("*.npz"))) == 0  # trimmed to the budget


def test_embedder_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLAKE_EMBEDDER", "word2vec")
    with pytest.raises(ConfigurationError, match="minilm"):
        Settings.from_env()
    monkeypatch.setenv("MEMLAKE_EMBEDDER", "bedrock")
    monkeypatch.setenv("MEMLAKE_BEDROCK_DIMENSIONS", "512")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "memlake-mcp")
    monkeypatch.delenv("MEMLAKE_SHARD_CACHE_DIR", raising=False)
    cfg = Settings.from_env()
    assert (cfg.embedder, cfg.embed_dim, cfg.shard_cache_dir) == (
        "bedrock",
        512,
        "/tmp/memlake-shards",
    )
