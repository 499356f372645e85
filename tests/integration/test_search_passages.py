"""Passage-level BM25 in the index shards (format 2), format-1 shards still searchable and
rebuilt, filters exact with passages, the best passage's offsets, and an absolute score.

Uses the hashed bag-of-words embedder of test_search_index and character windows (the path of
an embedder without a local tokenizer), shrunk so that short episodes have several passages.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlake.config import Settings
from memlake.context import Principal
from memlake.lake import Lake, Transaction
from memlake.search.backfill import embed_pending
from memlake.search.hybrid import search
from memlake.search.index import layout
from memlake.search.index import passages as passages_mod
from memlake.search.index.backlog import pending_map
from memlake.search.index.shard import FORMAT as SHARD_FORMAT
from memlake.search.index.shard import Shard
from memlake.search.index.state import EXTRA_KEY
from memlake.search.query.params import SearchParams
from memlake.store.local import LocalStore
from tests.integration.test_search_index import HashEmbedder, T, make, put, state
from tests.wiring import bare_lake, indexed_context

FILLER = "the weather was grey and everybody talked about nothing much at all today. "
FORMAT1_ARRAYS = [
    "header",
    "ids",
    "vocab",
    "seq",
    "t_start",
    "t_end",
    "ctx",
    "doc_len",
    "indptr",
    "indices",
    "tf",
    "vectors",
    "chunk_doc",
]


@pytest.fixture
def small_passages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(passages_mod, "CHAR_WINDOW", 120)
    monkeypatch.setattr(layout, "TAIL_DOCS", 4)
    monkeypatch.setattr(layout, "FANOUT", 2)


def long_episode(fact: str, at: int = 3, pieces: int = 8) -> str:
    parts = [FILLER] * pieces
    parts[at] = fact + " "
    return "".join(parts)


def hits(ctx: Any, query: str, **kw: Any) -> list[Any]:
    return search(ctx.lake, ctx.services.search, T, query=query, limit=20, recency=False, **kw)


def test_every_passage_gets_postings_and_offsets(tmp_path: Path, small_passages: None) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    content = long_episode("Maria adopted a grey parrot called Pixel in Lisbon.")
    eid = put(lake, content, title="pets")
    info = state(lake).shards[-1]
    shard = ctx.services.search.shards.load_many(lake.store, [info.key])[0]
    assert shard.format == info.format == SHARD_FORMAT
    starts, ends = shard.p_start.tolist(), shard.p_end.tolist()
    assert starts[0] == ends[0] == -1  # the title passage
    assert len(starts) >= 6 and ends[-1] == len(content)
    assert all(content[s:e].strip() for s, e in zip(starts[1:], ends[1:], strict=True))
    # one vector row per passage, each knowing its passage
    assert shard.chunk_passage.tolist() == list(range(len(starts)))
    (hit,) = hits(ctx, "parrot Pixel Lisbon")
    assert hit.id == eid and hit.passage is not None
    assert "parrot called Pixel" in content[hit.passage[0] : hit.passage[1]]
    # the BM25-only ranking finds the same passage
    (bm,) = hits(ctx, "parrot Pixel Lisbon", params=SearchParams(weights={"vector": 0.0}))
    assert bm.passage == hit.passage and bm.breakdown["vector_rank"] is None


def test_passages_pending_vectors_still_have_postings(tmp_path: Path, small_passages: None) -> None:
    emb = HashEmbedder()
    lake = bare_lake(LocalStore(tmp_path), dim=emb.dim)
    settings = Settings(data_dir=tmp_path, embed_sync_passages=2)
    ctx = indexed_context(Principal(T), lake, settings, emb)
    content = long_episode("a zeppelin!", at=6)
    eid = put(lake, content)
    assert pending_map(lake.snapshot(T)).get(eid, 0) > 0  # the fact's passage has no vector yet
    (hit,) = hits(ctx, "zeppelin", params=SearchParams(weights={"vector": 0.0}))
    assert hit.id == eid and "zeppelin" in content[hit.passage[0] : hit.passage[1]]


def test_passage_aggregations_rank_and_stay_in_range(tmp_path: Path, small_passages: None) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    both = put(lake, long_episode("Tom fixed the boiler", at=1) + "Anna painted the boiler room")
    one = put(lake, long_episode("Tom fixed the boiler", at=1))
    for agg in ("episode", "max", "top2", "mix"):
        got = hits(ctx, "Tom boiler Anna painted", params=SearchParams(bm25_agg=agg))
        assert [h.id for h in got][:2] == [both, one], agg
        assert all(0 < h.score <= 1 and 0 < h.breakdown["bm25_score"] <= 1 for h in got), agg


def test_filters_stay_exact_with_passages(tmp_path: Path, small_passages: None) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    big = [put(lake, long_episode(f"kayak trip number {i}"), context="big") for i in range(9)]
    small = put(lake, long_episode("a kayak trip"), context="small")
    assert [h.id for h in hits(ctx, "kayak trip", context="small")] == [small]
    got = hits(ctx, "kayak trip", allowed_ids={big[4], small})
    assert {h.id for h in got} == {big[4], small}
    assert all(h.passage and "kayak" in h.row["content"][h.passage[0] : h.passage[1]] for h in got)


def test_absolute_score_off_topic_query_scores_low(tmp_path: Path, small_passages: None) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    for i in range(6):
        put(lake, long_episode(f"the orchestra rehearsed symphony {i} with the new violinist"))
    real = hits(ctx, "orchestra violinist rehearsed symphony")
    off = hits(ctx, "quantum chromodynamics lattice gauge")
    assert real and real[0].score >= 0.3
    assert not off or off[0].score < 0.3
    assert hits(ctx, "zzqx wvvk") == []  # nothing matches at all: nothing returned
    b = real[0].breakdown
    assert set(b) == {
        "bm25_rank",
        "bm25_score",
        "vector_rank",
        "vector_score",
        "fused",
        "rerank",
        "recency",
        "score",
    }
    assert b["rerank"] is None and b["fused"] == b["score"] == real[0].score


def _as_format1(data: bytes) -> bytes:
    """The same shard written the way format 1 wrote it (no passage arrays)."""
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in FORMAT1_ARRAYS}
    head = json.loads(arrays["header"].tobytes())
    arrays["header"] = np.frombuffer(json.dumps({**head, "format": 1}).encode(), np.uint8)
    sink = io.BytesIO()
    np.savez(sink, **arrays)
    return sink.getvalue()


def _downgrade(lake: Lake, ctx: Any) -> None:
    """Turn every shard of the tenant into a format-1 object, its manifest entry too (as a
    store written before format 2 has them: no "format" key, and no "sha256" either)."""
    for info in state(lake).shards:
        lake.store.put(info.key, _as_format1(lake.store.get(info.key)))

    def change(txn: Transaction) -> None:
        doc = txn.extra[EXTRA_KEY]
        for s in doc["shards"]:
            s.pop("format", None)
            s.pop("sha256", None)

    lake.commit(T, change)
    ctx.services.search.shards.clear()


def test_format1_shards_search_and_are_rebuilt(tmp_path: Path, small_passages: None) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    ids = [put(lake, long_episode(f"cousin{i} visited Oslo")) for i in range(9)]
    _downgrade(lake, ctx)
    assert {s.format for s in state(lake).shards} == {1}
    old = hits(ctx, "cousin3 Oslo")
    assert old[0].id == ids[3] and old[0].passage is None  # episode-level BM25 only
    shard = ctx.services.search.shards.load_many(lake.store, [state(lake).shards[0].key])[0]
    assert shard.format == 1 and not shard.has_passages

    report = embed_pending(lake, ctx.services.search, T, max_passages=0)  # maintenance
    assert report.upgraded == len(state(lake).shards)
    assert {s.format for s in state(lake).shards} == {SHARD_FORMAT}
    new = hits(ctx, "cousin3 Oslo")
    assert new[0].id == ids[3]
    assert "cousin3" in new[0].row["content"][new[0].passage[0] : new[0].passage[1]]


def test_a_write_rebuilds_format1_shards_it_touches(tmp_path: Path, small_passages: None) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    ids = [put(lake, long_episode(f"nephew{i} sailed to Crete")) for i in range(6)]
    _downgrade(lake, ctx)
    embedded = len(ctx.services.search.embedder.texts)
    put(lake, long_episode("a new trip to Rhodes"))  # rebuilds the tail and one sealed shard
    assert ctx.services.search.embedder.texts[embedded:] != []  # only the new episode...
    assert len(ctx.services.search.embedder.texts) - embedded <= 9  # ...nothing re-embedded
    assert all(s.format == SHARD_FORMAT for s in state(lake).shards)
    got = hits(ctx, "nephew5 Crete")
    assert got[0].id == ids[5] and got[0].passage is not None


def test_format1_shard_without_rows_keeps_episode_terms(tmp_path: Path) -> None:
    lake, ctx = make(tmp_path, HashEmbedder())
    put(lake, "the heron stood in the reeds")
    info = state(lake).shards[0]
    old = Shard.from_bytes(_as_format1(lake.store.get(info.key)))
    from memlake.search.index.shard_build import build, docs_of

    rebuilt = Shard.from_bytes(build(docs_of(old, None), model=old.model, dim=old.dim))
    assert rebuilt.format == SHARD_FORMAT and rebuilt.p_start.tolist() == [-1]
    tids = rebuilt.term_ids(["heron"])
    best, _, scores = rebuilt.bm25_passages(tids, [1.0])
    (which,) = rebuilt.best_passages(np.array([0]), scores)
    assert best[0] > 0 and which == 0 and rebuilt.passage_span(int(which)) is None
