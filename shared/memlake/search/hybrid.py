"""Hybrid episode search: BM25 and vector retrieval over the index shards, fused by score.

Plan of one search: the newest manifest (one request when warm), the shards whose time range
and contexts can match (loaded in parallel, only those not cached), then per shard a BM25 top-k'
and a vector top-k' with every row filter (context, time range, dead rows, allowed ids) applied
inside the search as a mask (the shards' IVF lists probed are planned across them first,
decision 1303); the per-shard lists merge into one list per retriever (BM25 scores
use idf over all searched shards, cosines are comparable as they are), fusion, an optional
recency boost, and the full rows of the final hits from the episodes table.

An episode's BM25 score comes from the whole episode and from its passages (`bm25_agg`), its
vector score from its passages' vectors (`vec_agg`); the default fusion is a convex combination
of theoretically normalised scores, so `hit.score` is absolute (docs/decisions/1201).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import numpy as np

from memlake.episodes import TABLE
from memlake.errors import MemlakeError
from memlake.lake import Lake
from memlake.lake.snapshot import Snapshot
from memlake.search.index import kernels
from memlake.search.index.state import SearchState
from memlake.search.index.text import unique_terms
from memlake.search.query.fusion import (
    FusedHit,
    apply_recency,
    convex_fuse,
    minmax,
    normalise_scores,
    rrf_fuse,
)
from memlake.search.query.hit_vectors import read_ahead
from memlake.search.query.hits_ahead import HitsAhead
from memlake.search.query.params import DEFAULT_PARAMS, SearchHit, SearchParams
from memlake.search.query.query_vector import embed_ahead, query_deadline
from memlake.search.query.rerank import rerank_search
from memlake.search.query.retrieve import Ranked, mask_of
from memlake.search.query.sides import Sides
from memlake.search.searcher import Searcher
from memlake.store.base import ObjectStore


def _us(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1_000_000)


def search(
    lake: Lake,
    searcher: Searcher,
    tenant: str,
    *,
    query: str,
    limit: int,
    context: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    recency: bool = True,
    allowed_ids: set[str] | None = None,
    params: SearchParams = DEFAULT_PARAMS,
    query_vector: np.ndarray | None = None,
    read_vectors: bool = False,
) -> list[SearchHit]:
    """Episodes of `tenant` best matching `query` (BM25 + vectors, fused), best first, at most
    `limit` (the tools' input models bound it and the query, MAX_LIMIT and MAX_QUERY_CHARS).

    Filters: `context` (exact), [start, end] overlapping when the episode happened, and
    `allowed_ids` (only these ids; an empty set finds nothing). `recency` boosts recent episodes
    a little (at most 10% for old ones). Each hit has `score` in 0..1, `breakdown` (bm25 and
    vector rank/score, the fused score before recency, rerank, the recency factor), `passage`
    (the best matching content passage) and the full `row`.
    `params` tunes the ranking and `query_vector` skips embedding the query (benchmarks).
    `read_vectors`: the hits' passage vectors are read from their shards while their rows are
    (a caller that scores their passages next: evidence, memlake.search.query.hit_vectors).
    """

    def run(snap: Snapshot) -> list[SearchHit]:
        searcher.settle_erasures(snap)
        return _search_in(
            snap, lake.store, searcher, query, limit, context, start, end, recency, allowed_ids,
            params, query_vector, read_vectors,
        )  # fmt: skip

    # a cold process reads from the manifest's copy before it is known to be the newest: a
    # round trip sooner; answered only once it is, done again otherwise (memlake.lake.head_copy)
    snap, settled = lake.snapshot_ahead(tenant)
    try:
        hits: list[SearchHit] | None = run(snap)
    except MemlakeError:
        if settled():
            raise
        hits = None  # an object of an older manifest, collected since: the newest decides
    if hits is not None and settled():
        return hits
    return run(lake.snapshot(tenant))


def _search_in(
    snap: Snapshot,
    store: ObjectStore,
    searcher: Searcher,
    query: str,
    limit: int,
    context: str | None,
    start: datetime | None,
    end: datetime | None,
    recency: bool,
    allowed_ids: set[str] | None,
    params: SearchParams,
    query_vector: np.ndarray | None,
    read_vectors: bool = False,
) -> list[SearchHit]:
    """search() on one snapshot."""
    state = snap.derived("search_state", lambda: SearchState.from_extra(snap.extra))
    if state is None or (allowed_ids is not None and not allowed_ids):
        return []
    use_bm25 = params.weights.get("bm25", 1.0) > 0
    use_vec = params.weights.get("vector", 1.0) > 0
    if use_vec and query_vector is None:
        state.check_model(searcher.embedder.name, searcher.embedder.dim)
    s_us, e_us = _us(start), _us(end)
    infos = [s for s in state.shards if s.may_match(context, s_us, e_us)]
    if not infos:
        return []
    qvec: Any = None  # the vector, or a Future of it: embedded while shards load and BM25 runs
    if use_vec:
        qvec = (
            query_vector
            if query_vector is not None
            else embed_ahead(searcher.embed_query, query, query_deadline(searcher.embedder))
        )
    shards = searcher.shards.load_many(store, [s.key for s in infos], infos)
    cand = max(params.candidates, limit)
    allowed = sorted(allowed_ids) if allowed_ids is not None else None

    terms = unique_terms([query]) if use_bm25 else []
    term_ids = [s.term_ids(terms) for s in shards]
    idf = np.zeros(0)  # (no terms: no BM25 side, and no pass over the shards for it)
    if terms:
        n_docs = sum(s.n for s in shards)
        tids = zip(shards, term_ids, strict=True)
        df = sum((s.doc_freqs(t) for s, t in tids), np.zeros(len(terms)))
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))  # bm25s "lucene" idf, over all shards
    total_idf = float(idf.sum())

    masks = [
        mask_of(s, i, context, s_us, e_us, allowed) for s, i in zip(shards, infos, strict=True)
    ]
    reranker = searcher.reranker  # the reranking stage (memlake.search.query.rerank, decision 1210)
    wanted = limit if reranker is None else max(limit, searcher.settings.rerank_candidates)
    ahead = HitsAhead(snap.table(TABLE).read_ahead, wanted)  # their rows read meanwhile (4401)
    sides = Sides(shards, masks, params, cand, ahead)
    bm25_found, vec_found = sides.run(term_ids, idf.tolist(), total_idf, qvec)
    qvec = sides.qvec
    bm25 = bm25_found.ranked(shards, cand)
    vec = vec_found.ranked(shards, cand)
    fused = _fused(bm25, vec, params, total_idf)
    searcher.shards.promote(store, infos)  # whole shards later, if the tenant fits (1306)
    hits = _hits(snap, fused, bm25, vec, wanted, recency, params, qvec, read_vectors)
    if reranker is not None:
        top = searcher.settings.rerank_candidates
        hits = rerank_search(hits, query, searcher.embedder, reranker, top)[:limit]
    kernels.load_later()  # numba's kernels: after a process's first search, not during it (2502)
    return hits


def _fused(bm25: Ranked, vec: Ranked, params: SearchParams, total_idf: float) -> list[FusedHit]:
    if params.fusion == "rrf":
        rankings = {"bm25": bm25.ids, "vector": vec.ids}
        weights = {n: params.weights.get(n, 1.0) for n in rankings}
        if params.confidence_ref and bm25.ids and total_idf > 0:
            confidence = bm25.raw[bm25.ids[0]]  # already over the query's total idf
            lo, hi = params.confidence_clip
            weights["bm25"] *= min(hi, max(lo, confidence / params.confidence_ref))
        return normalise_scores(
            rrf_fuse(rankings, k=params.k, weights=weights), k=params.k, weights=weights
        )
    scores = {"bm25": bm25.scores, "vector": vec.scores}
    if params.norm == "minmax":
        scores = {n: minmax(s) for n, s in scores.items()}
    return convex_fuse(scores, alpha=params.alpha, weights=params.weights)


def _passage(h: FusedHit, bm25: Ranked, vec: Ranked, alpha: float) -> tuple[int, int] | None:
    """The best content passage: the one of the retriever whose passage counts more."""
    b = alpha * bm25.best.get(h.id, 0.0)
    v = (1 - alpha) * vec.best.get(h.id, 0.0)
    first, other = (vec, bm25) if v > b else (bm25, vec)
    return first.passage(h.id) or other.passage(h.id)


def _hits(
    snap: Any,
    fused: list[FusedHit],
    bm25: Ranked,
    vec: Ranked,
    limit: int,
    recency: bool,
    params: SearchParams,
    qvec: np.ndarray | None,
    read_vectors: bool = False,
) -> list[SearchHit]:
    fused = [h for h in fused if h.score > 0]
    base = {h.id: h.score for h in fused}
    factor: dict[str, float] = {}
    if recency:
        now_us = time.time() * 1_000_000
        ends = {h.id: vec.end(h.id) or bm25.end(h.id) or 0 for h in fused}
        ages = {h.id: (now_us - ends[h.id]) / 1_000_000 for h in fused}
        fused = apply_recency(
            fused, ages, half_life_days=params.half_life_days, weight=params.recency_weight
        )
        factor = {h.id: (h.score / base[h.id] if base[h.id] else 1.0) for h in fused}
    table = snap.table(TABLE)

    def located(eid: str) -> tuple[Any, int] | None:  # the shard and doc the search found
        where = vec.where.get(eid) or bm25.where.get(eid)
        return None if where is None else (where[0], where[1])

    if read_vectors:  # in the same round as the rows
        top = [(h.id, located(h.id)) for h in fused[:limit]]
        read_ahead([(eid, at) for eid, at in top if at is not None])
    rows = table.lookup([h.id for h in fused[:limit]])  # at once: a cold search reads them
    hits: list[SearchHit] = []
    for h in fused:
        row = rows[h.id] if h.id in rows else table.lookup([h.id])[h.id]
        if row is None:  # not live in this snapshot (cannot happen with a consistent index)
            continue
        b, v = bm25.raw.get(h.id), vec.raw.get(h.id)
        hits.append(
            SearchHit(
                id=h.id,
                score=round(h.score, 6),
                breakdown={
                    "bm25_rank": h.ranks["bm25"],
                    "bm25_score": None if b is None else round(b, 6),
                    "vector_rank": h.ranks["vector"],
                    "vector_score": None if v is None else round(v, 6),
                    "fused": round(base[h.id], 6),
                    "rerank": None,
                    "recency": round(factor[h.id], 6) if recency else None,
                    "score": round(h.score, 6),
                },
                row=row,
                snapshot=snap,
                query_vector=qvec,
                passage=_passage(h, bm25, vec, params.alpha),
                located=located(h.id),
            )
        )
        if len(hits) == limit:
            break
    return hits
