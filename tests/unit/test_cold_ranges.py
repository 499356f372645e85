"""A cold search opens big sealed shards by byte ranges and reads only what it needs
(docs/decisions/1306): same results as whole shards, a small share of the objects' bytes on the
local store and on S3, nothing more when warm, a bounded cache, clear errors for bad objects."""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
from moto import mock_aws

from memlake.config import Settings
from memlake.context import Principal
from memlake.errors import CorruptObject
from memlake.lake import Lake, Transaction
from memlake.search.hybrid import search
from memlake.search.index import cache, ivf, layout, passages, shard_source, shard_vectors
from memlake.search.index.shard import Shard
from memlake.search.index.state import ShardInfo
from memlake.search.query import sides
from memlake.search.query.params import SearchParams
from memlake.search.searcher import Searcher
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store
from tests.integration.test_search_index import HashEmbedder, T, state
from tests.support.counting import CountingStore
from tests.wiring import bare_lake, indexed_context

WORDS = [f"w{i}" for i in range(400)]
EPISODES = 136
DIM = 384  # real MiniLM width: eager per-row arrays are small next to the vectors


def _content(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(150))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A lake of 136 episodes x ~5 passages in shards of 128 / 8 episodes, the sealed one with
    an IVF of 32 rows a list; constants shrunk so the shard counts as big."""
    root = tmp_path_factory.mktemp("cold")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(layout, "TAIL_DOCS", 8)
        mp.setattr(layout, "FANOUT", 4)
        mp.setattr(passages, "CHAR_WINDOW", 160)  # ~5 passages an episode
        mp.setattr(ivf, "IVF_MIN_ROWS", 256)
        mp.setattr(ivf, "ROWS_PER_LIST", 32)
        mp.setattr(ivf, "NPROBE", 2)
        mp.setattr(ivf, "EXACT_BELOW", 0)
        mp.setattr(shard_vectors, "ROWS_PER_DOC_WANTED", 1)
        mp.setattr(cache, "LAZY_MIN_BYTES", 256 << 10)
        mp.setattr(cache, "LAZY_GAP", 1 << 10)  # scaled down with the shards
        emb = HashEmbedder(dim=DIM)
        lake = bare_lake(LocalStore(root), dim=DIM)
        ctx = indexed_context(Principal(T), lake, Settings(data_dir=root), emb)
        rng = random.Random(5)
        ids = []
        for i in range(EPISODES):
            row = {"id": f"ep{i:03d}", "content": _content(rng), "context": f"c{i % 3}"}
            row["created_at"] = None

            def change(txn: Transaction, row: dict[str, Any] = row) -> None:
                txn.put("episodes", row)

            lake.commit(T, change)
            ids.append(row["id"])
        yield {"root": root, "lake": lake, "emb": emb, "ids": ids, "ctx": ctx}


@pytest.fixture(autouse=True)
def _ranged_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests look at ranged shards: no background promotion to whole ones (tested last).
    The coalescing gaps of reads in list order are scaled down with the shards, as LAZY_GAP
    is when they are built (at 128-256 KiB they would cover most of these ~1 MB shards)."""
    monkeypatch.setattr(cache, "PROMOTE", False)
    monkeypatch.setattr(shard_source, "LIST_GAP", 1 << 10)
    monkeypatch.setattr(shard_source, "ROWS_GAP", 2 << 10)


def _searcher(emb: HashEmbedder, max_bytes: int = 1 << 30) -> Searcher:
    return Searcher(Settings(), embedder=emb, cache_bytes=max_bytes, reranker=None)


def _run(lake: Lake, searcher: Searcher, query: str, **kw: Any) -> list[tuple[Any, ...]]:
    params = SearchParams(candidates=5)
    hits = search(lake, searcher, T, query=query, limit=5, recency=False, params=params, **kw)
    return [(h.id, h.score, h.breakdown, h.passage) for h in hits]


def _lazy_infos(lake: Lake) -> list[ShardInfo]:
    return [s for s in state(lake).shards if cache.lazy(s)]


def test_the_layout_has_big_sealed_shards_with_an_ivf(built: dict[str, Any]) -> None:
    infos = state(built["lake"]).shards
    assert [s.docs for s in infos] == [128, 8]
    big = _lazy_infos(built["lake"])
    assert len(big) == 1 and all(s.format >= 4 and s.chunks >= ivf.IVF_MIN_ROWS for s in big)


@pytest.mark.parametrize(
    "filters",
    [{}, {"context": "c1"}, {"allowed_ids": "every third"}, {"start": "mid"}, {"dead": True}],
)
def test_a_ranged_search_finds_exactly_what_a_whole_one_finds(
    built: dict[str, Any], monkeypatch: pytest.MonkeyPatch, filters: dict[str, Any]
) -> None:
    lake, emb, ids = built["lake"], built["emb"], built["ids"]
    kw: dict[str, Any] = {}
    if "context" in filters:
        kw["context"] = filters["context"]
    if "allowed_ids" in filters:
        kw["allowed_ids"] = set(ids[::3])
    if "start" in filters:
        mid = state(lake).shards[0].time  # from within the big shard's time range
        kw["start"] = datetime.fromtimestamp((mid[0] + mid[1]) / 2e6, UTC)
    if "dead" in filters:  # a copy of the lake in which some sealed episodes are deleted
        lake = _with_deletes(built, monkeypatch)
    queries = [" ".join(random.Random(i).sample(WORDS[:60], 3)) for i in range(12)]
    queries += ["w1", "w399 w398", "nothing-matches"]
    ranged, whole = _searcher(emb), _searcher(emb)
    for q in queries:
        got = _run(lake, ranged, q, **kw)
        with monkeypatch.context() as mp:
            mp.setattr(cache, "LAZY_MIN_BYTES", 1 << 40)
            want = _run(lake, whole, q, **kw)
        assert whole.shards.last.ranged == 0
        assert got == want
    assert any(s.lazy for s in ranged.shards._items.values())
    assert not any(s.lazy for s in whole.shards._items.values())


def test_postings_are_read_ahead_and_a_failed_read_ahead_is_retried(
    built: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search reads every ranged shard's postings ahead on the prefetch threads; the BM25
    task uses what they read, and reads again itself when the read ahead failed."""
    lake, emb = built["lake"], built["emb"]
    want = _run(lake, _searcher(emb), QUERY)
    threads: list[str] = []
    began = threading.Event()
    read_postings, bm25_task = Shard.read_postings, sides.Sides._bm25

    def flaky(shard: Shard, ids: Any) -> Any:
        threads.append(threading.current_thread().name)
        began.set()
        if len(threads) == 1:
            raise OSError("a read that failed")
        return read_postings(shard, ids)

    def after_read_ahead(self: sides.Sides, no: int) -> Any:
        if self.shards[no].lazy:  # else the task may cancel a read ahead not started yet
            assert began.wait(5)
            began.clear()
        return bm25_task(self, no)

    monkeypatch.setattr(Shard, "read_postings", flaky)
    monkeypatch.setattr(sides.Sides, "_bm25", after_read_ahead)
    assert _run(lake, _searcher(emb), QUERY) == want  # cold again: the task read it itself
    assert _run(lake, _searcher(emb), "w5 w6 w7") == _run(lake, _searcher(emb, 1 << 40), "w5 w6 w7")
    # (a read ahead not started when its task comes is cancelled: the task reads itself)
    assert all(t.startswith("memlake-prefetch") for t in threads)


def _with_deletes(built: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Lake:
    monkeypatch.setattr(layout, "TAIL_DOCS", 8)
    monkeypatch.setattr(layout, "FANOUT", 4)
    monkeypatch.setattr(layout, "DEAD_FRACTION", 1.0)  # keep the sealed shards (dead rows)
    root = built["root"].parent / "with-deletes"
    if not root.exists():
        _copy(LocalStore(built["root"]), LocalStore(root))
        lake = bare_lake(LocalStore(root), dim=DIM)
        indexed_context(Principal(T), lake, Settings(data_dir=root), built["emb"])
        for eid in built["ids"][1:40:4]:
            lake.commit(T, lambda txn, eid=eid: txn.delete("episodes", eid))
    lake = bare_lake(LocalStore(root), dim=DIM)
    assert any(s.dead for s in _lazy_infos(lake))
    return lake


def _copy(src: Any, dst: Any) -> None:
    for obj in src.list(""):
        dst.put(obj.key, src.get(obj.key))


class KeyedStore(CountingStore):
    """Counts requests, and bytes per key read by whole GETs and by range GETs."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.whole: Counter[str] = Counter()
        self.ranged: Counter[str] = Counter()
        self.ranged_requests: Counter[str] = Counter()

    def get(self, key: str) -> bytes:
        data = super().get(key)
        self.whole[key] += len(data)
        return data

    def get_range(self, key: str, start: int, end: int) -> bytes:
        data = super().get_range(key, start, end)
        self.ranged[key] += len(data)
        self.ranged_requests[key] += 1
        return data

    def clear(self) -> dict[str, Any]:
        out = {"counts": self.reset(), "whole": self.whole, "ranged": self.ranged}
        out["ranged_requests"] = self.ranged_requests
        self.whole, self.ranged, self.ranged_requests = Counter(), Counter(), Counter()
        return out


def _cold_reads(store: KeyedStore, emb: HashEmbedder, query: str) -> dict[str, Any]:
    """One cold search (a fresh lake and searcher on `store`), then the same search warm."""
    lake = bare_lake(store, dim=DIM)
    searcher = _searcher(emb)
    infos = _lazy_infos(lake)
    store.clear()
    hits = _run(lake, searcher, query)
    cold = store.clear()
    assert _run(lake, searcher, query) == hits
    return {"cold": cold, "warm": store.clear(), "hits": hits, "infos": infos}


def _check_budget(got: dict[str, Any]) -> None:
    infos, cold, warm = got["infos"], got["cold"], got["warm"]
    keys = {s.key for s in infos}
    object_bytes = sum(s.bytes for s in infos)
    vector_bytes = sum(s.chunks * DIM * 4 for s in infos)
    ranged = sum(cold["ranged"][k] for k in keys)
    assert got["hits"]
    assert not keys & set(cold["whole"])  # no big shard is read whole
    assert cold["counts"]["head"] == warm["counts"]["head"]  # sizes come from the manifest
    assert 0 < ranged < 0.15 * vector_bytes < object_bytes
    # per big shard: the tail, the eager round, postings, probed lists, re-score rows
    assert all(0 < cold["ranged_requests"][k] <= 40 for k in keys)
    assert not warm["ranged"] and not keys & set(warm["whole"])  # warm: no shard bytes


def test_a_cold_search_on_the_local_store_reads_only_what_it_needs(
    built: dict[str, Any],
) -> None:
    _check_budget(_cold_reads(KeyedStore(LocalStore(built["root"])), built["emb"], QUERY))


QUERY = "w3 w17 w250"


def test_a_cold_search_on_s3_reads_only_probed_lists_and_query_postings(
    built: dict[str, Any],
) -> None:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="cold")
        s3 = S3Store("cold", client=client)
        _copy(LocalStore(built["root"]), s3)
        got = _cold_reads(KeyedStore(s3), built["emb"], QUERY)
        _check_budget(got)
        local = _cold_reads(KeyedStore(LocalStore(built["root"])), built["emb"], QUERY)
        assert got["hits"] == local["hits"]


def test_the_cache_counts_faiss_lists_and_stays_in_its_budget(built: dict[str, Any]) -> None:
    lake, emb = built["lake"], built["emb"]
    searcher = _searcher(emb)
    _run(lake, searcher, "w5")
    shards = searcher.shards
    big = [s for s in shards._items.values() if s.lazy]
    before = [s.nbytes for s in big]
    _run(lake, searcher, "w5 w6 w7 w300")  # more lists probed: FAISS holds their codes
    grown = [s.nbytes - b for s, b in zip(big, before, strict=True)]
    held = [s._ivf.nbytes if s._ivf is not None else 0 for s in big]  # type: ignore[attr-defined]
    assert all(g > 0 for g in grown) and sum(held) >= sum(grown)
    assert shards._bytes == sum(s.nbytes for s in shards._items.values())
    one = max(s.nbytes for s in big)
    tight = _searcher(emb, max_bytes=int(one * 1.6 / (1 - cache.RANGE_SHARE)))
    for q in ("w5", "w9 w10", "w11 w300", "w5"):
        _run(lake, tight, q)
        assert tight.shards._bytes <= tight.shards.max_bytes or len(tight.shards._items) == 1
        assert tight.shards.ranges.nbytes <= tight.shards.ranges.max_bytes


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_shard_object_is_a_clear_error(
    built: dict[str, Any], tmp_path: Path, damage: str
) -> None:
    store = LocalStore(tmp_path)
    _copy(LocalStore(built["root"]), store)
    lake = bare_lake(store, dim=DIM)
    victim = _lazy_infos(lake)[0].key
    data = store.get(victim)
    bad = data[: len(data) // 2] if damage == "truncated" else np.random.bytes(len(data))
    store.put(victim, bad)
    with pytest.raises(CorruptObject, match="not a readable .npz"):
        _run(lake, _searcher(built["emb"]), "w3 w4")


def test_a_tenant_that_fits_is_promoted_to_whole_shards_in_the_background(
    built: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranged shards cost every new query its re-score rows and postings; when all the shards a
    search touched fit the budget they are fetched whole once, in the background, and later
    searches read nothing and find the same."""
    monkeypatch.setattr(cache, "PROMOTE", True)
    store = KeyedStore(LocalStore(built["root"]))
    lake = bare_lake(store, dim=DIM)
    searcher = _searcher(built["emb"])
    keys = {s.key for s in _lazy_infos(lake)}
    first = _run(lake, searcher, QUERY)
    searcher.shards.wait_promotions()
    promoted = list(searcher.shards._items.values())
    assert not any(s.lazy for s in promoted)
    assert keys <= set(store.clear()["whole"])  # each fetched whole once
    held = [s.ivf_index() for s in promoted if s.ivf_index() is not None]
    assert held and all(i._have.all() for i in held)  # every list added on the promotion thread
    for query in (QUERY, "w5 w6", "w11 w300"):
        got = _run(lake, searcher, query)
        if query == QUERY:
            assert got == first
    reads = store.clear()
    assert not reads["ranged"] and not keys & set(reads["whole"])
    assert searcher.shards._bytes == sum(s.nbytes for s in searcher.shards._items.values())


def test_a_tenant_that_does_not_fit_stays_ranged(
    built: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "PROMOTE", True)
    store = KeyedStore(LocalStore(built["root"]))
    lake = bare_lake(store, dim=DIM)
    total = sum(map(cache.resident, state(lake).shards))  # as a whole load holds them
    searcher = _searcher(built["emb"], max_bytes=int(total / (1 - cache.RANGE_SHARE)))
    _run(lake, searcher, QUERY)  # all of it would take over PROMOTE_SHARE of the budget
    searcher.shards.wait_promotions()
    assert any(s.lazy for s in searcher.shards._items.values())
    assert not {s.key for s in _lazy_infos(lake)} & set(store.clear()["whole"])


def test_shards_loaded_in_parallel_are_not_fetched_twice_when_the_cache_is_small(
    built: dict[str, Any],
) -> None:
    """A search over more shards than the cache holds used to fetch the evicted ones again."""
    store = CountingStore(LocalStore(built["root"]))
    lake = bare_lake(store, dim=DIM)
    infos = state(lake).shards
    tiny = cache.ShardCache(max_bytes=1)
    store.reset()
    tiny.load_many(store, [s.key for s in infos])  # writers' path: whole shards
    assert store.counts["get"] == len(infos)


def test_a_ranged_shard_assembles_its_ivf_index_as_it_is_opened(
    built: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the thread that opened it, beside the other shards' reads: the probe plan, which
    needs every shard's index and int8 centroids, built them one shard after the other."""
    infos = _lazy_infos(built["lake"])
    store = LocalStore(built["root"])
    monkeypatch.setattr(ivf, "QUANTISE_AHEAD_FROM", 1)
    for shard in cache.ShardCache(1 << 30).load_many(store, [i.key for i in infos], infos):
        assert shard._ivf is not None and shard._ivf.quantised._made is not None
    monkeypatch.setattr(ivf, "QUANTISE_AHEAD_FROM", 10**9)  # small shards: the index only
    for shard in cache.ShardCache(1 << 30).load_many(store, [i.key for i in infos], infos):
        assert shard._ivf is not None and shard._ivf.quantised._made is None


def test_evidence_takes_its_hits_passage_vectors_from_the_ranged_shards(
    built: dict[str, Any],
) -> None:
    """Evidence (and a passage search's best_span) read their hits' stored passages from the
    shards the search found them in (ranged: a hit's rows, not a whole chunk segment, decision
    4501): the same offsets, in order, and vectors (half precision) as the chunk rows hold."""
    from memlake.search.query.best_passage import chunk_rows
    from memlake.search.query.hit_vectors import stored_passages

    lake, emb = built["lake"], built["emb"]
    searcher = _searcher(emb)  # cold: the big sealed shard opens by ranges
    hits = search(
        lake, searcher, T, query="w1 w2 w3 w4", limit=20, recency=False, read_vectors=True
    )
    assert len(hits) == 20 and all(h.located is not None for h in hits)
    assert any(isinstance(h.located[0].vectors, shard_source.RowReader) for h in hits)
    got = stored_passages(hits, emb.name)
    rows = chunk_rows(hits[0].snapshot, [h.id for h in hits])
    for h in hits:
        mine, theirs = got[h.id], rows[h.id]
        assert theirs is not None
        assert (mine["starts"], mine["ends"]) == (list(theirs["starts"]), list(theirs["ends"]))
        assert mine["vectors"].shape == np.asarray(theirs["vectors"]).shape, h.id
        assert np.allclose(mine["vectors"], theirs["vectors"], atol=2e-3), h.id
