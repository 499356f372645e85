"""Hybrid episode search: BM25 and vector retrieval over the index shards, fused by rank.

Plan of one search: the newest manifest (one request when warm), the shards whose time range
and contexts can match (loaded in parallel, only those not cached), then per shard a BM25 top-k'
and a vector top-k' with every row filter (context, time range, dead rows, allowed ids) applied
inside the search as a mask; the per-shard lists merge into one list per retriever (BM25 scores
use idf over all searched shards, cosines are comparable as they are), weighted reciprocal rank
fusion, an optional recency boost, and the full rows of the final hits from the episodes table.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from memlake.episodes import TABLE
from memlake.lake import Lake
from memlake.search.embedding import Searcher
from memlake.search.fusion import apply_recency, normalise_scores, rrf_fuse
from memlake.search.index import Shard
from memlake.search.shards import SearchState, ShardInfo
from memlake.search.text import unique_terms

MAX_LIMIT = 50
MAX_QUERY_CHARS = 2_000


@dataclass(frozen=True)
class SearchParams:
    """Tuning knobs (docs/decisions/0301-hybrid-search-tuning.md has the measurements)."""

    k: float = 1.0
    weights: dict[str, float] = field(default_factory=lambda: {"bm25": 1.0, "vector": 1.0})
    candidates: int = 30  # per retriever, before fusion (at least `limit`)
    #: BM25's weight scales with its confidence: the top BM25 score over the query's total idf
    #: (how much of the query the best keyword match covers), relative to this reference
    confidence_ref: float | None = 0.2
    confidence_clip: tuple[float, float] = (0.25, 4.0)
    half_life_days: float = 30.0
    recency_weight: float = 0.1


DEFAULT_PARAMS = SearchParams()


@dataclass(frozen=True)
class SearchHit:
    id: str
    score: float  # 0..1
    breakdown: dict[str, Any]
    row: dict[str, Any]
    #: what the search saw, for shaping results (best passages): the snapshot the row was
    #: read from and the query's vector (None when vectors were not searched)
    snapshot: Any = field(default=None, compare=False, repr=False)
    query_vector: np.ndarray | None = field(default=None, compare=False, repr=False)


@dataclass
class _Ranked:
    ids: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    age: dict[str, float] = field(default_factory=dict)


def _us(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1_000_000)


def _mask(
    shard: Shard,
    info: ShardInfo,
    context: str | None,
    start: int | None,
    end: int | None,
    allowed: list[str] | None,
) -> np.ndarray | None:
    """Which docs of the shard may be returned (None: all)."""
    if not info.dead and context is None and start is None and end is None and allowed is None:
        return None
    mask = np.ones(shard.n, dtype=bool)
    if info.dead:
        mask &= ~np.isin(shard.ids, list(info.dead))
    if context is not None:
        no = shard.contexts.index(context) if context in shard.contexts else -2
        mask &= shard.ctx == no
    if start is not None:
        mask &= shard.t_end >= start
    if end is not None:
        mask &= shard.t_start <= end
    if allowed is not None:
        mask &= np.isin(shard.ids, allowed)
    return None if mask.all() else mask


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best positive scores, best first."""
    pos = np.flatnonzero(scores > 0)
    if len(pos) > k:
        pos = pos[np.argpartition(-scores[pos], k - 1)[:k]]
    return pos[np.argsort(-scores[pos], kind="stable")]


class _Found:
    """One retriever's per-shard top lists, merged as arrays (Python objects only for the final
    top k): best score first, ties by id."""

    def __init__(self) -> None:
        self.parts: list[tuple[int, np.ndarray, np.ndarray]] = []

    def add(self, shard_no: int, docs: np.ndarray, scores: np.ndarray) -> None:
        if len(docs):
            self.parts.append((shard_no, docs, scores))

    def ranked(self, shards: list[Shard], k: int) -> _Ranked:
        out = _Ranked()
        if not self.parts:
            return out
        which = np.concatenate([np.full(len(d), s) for s, d, _ in self.parts])
        docs = np.concatenate([d for _, d, _ in self.parts])
        scores = np.concatenate([v for _, _, v in self.parts])
        best = np.argpartition(-scores, k - 1)[:k] if len(scores) > k else np.arange(len(scores))
        picked = []
        for i in best.tolist():
            shard, d = shards[int(which[i])], int(docs[i])
            picked.append((-float(scores[i]), shard.id_list[d], int(shard.t_end[d])))
        for neg, eid, t_end in sorted(picked):
            out.ids.append(eid)
            out.scores[eid] = -neg
            out.age[eid] = t_end
        return out


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
) -> list[SearchHit]:
    """Episodes of `tenant` best matching `query` (BM25 + vectors, fused), best first, at most
    `limit` (the tools' input models bound it and the query, MAX_LIMIT and MAX_QUERY_CHARS).

    Filters: `context` (exact), [start, end] overlapping when the episode happened, and
    `allowed_ids` (only these ids; an empty set finds nothing). `recency` boosts recent episodes
    a little (at most 10% for old ones). Each hit has `score` in 0..1, `breakdown` (bm25 and
    vector rank/score, the fused score before recency, the recency factor) and the full `row`.
    `params` tunes the ranking and `query_vector` skips embedding the query (benchmarks).
    """
    snap = lake.snapshot(tenant)
    state = SearchState.from_extra(snap.extra)
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
    shards = searcher.shards.load_many(lake.store, [s.key for s in infos])
    cand = max(params.candidates, limit)
    allowed = sorted(allowed_ids) if allowed_ids is not None else None

    terms = unique_terms([query]) if use_bm25 else []
    term_ids = [s.term_ids(terms) for s in shards]
    total = sum(s.n for s in shards)
    df = sum((s.doc_freqs(t) for s, t in zip(shards, term_ids, strict=True)), np.zeros(len(terms)))
    idf = np.log1p((total - df + 0.5) / (df + 0.5))  # bm25s "lucene" idf, over all shards searched
    qvec = None
    if use_vec:
        qvec = query_vector if query_vector is not None else searcher.embed_query(query)

    bm25_found, vec_found = _Found(), _Found()
    idf_list = idf.tolist()
    for no, (shard, info, tids) in enumerate(zip(shards, infos, term_ids, strict=True)):
        mask = _mask(shard, info, context, s_us, e_us, allowed)
        if mask is not None and not mask.any():
            continue
        if terms and any(t >= 0 for t in tids):
            scores = shard.bm25(tids, idf_list)
            if mask is not None:
                scores *= mask  # bm25s weight_mask semantics: filtered docs score 0
            top = _top(scores, cand)
            bm25_found.add(no, top, scores[top])
        if qvec is not None:
            docs, sims = shard.vector_top(qvec, mask, cand)
            vec_found.add(no, docs, sims)
    bm25 = bm25_found.ranked(shards, cand)
    weights = dict(params.weights)
    if params.confidence_ref and bm25.ids and idf.sum() > 0:
        confidence = bm25.scores[bm25.ids[0]] / float(idf.sum())
        lo, hi = params.confidence_clip
        scale = min(hi, max(lo, confidence / params.confidence_ref))
        weights["bm25"] = weights.get("bm25", 1.0) * scale
    vec = vec_found.ranked(shards, cand)
    reranker = searcher.reranker  # the reranking stage (memlake.search.rerank, decision 1210)
    if reranker is None:
        return _fuse(snap, bm25, vec, limit, recency, params, weights, qvec)
    from memlake.search.rerank import rerank_search

    wanted = max(limit, searcher.settings.rerank_candidates)
    hits = _fuse(snap, bm25, vec, wanted, recency, params, weights, qvec)
    return rerank_search(hits, query, searcher, reranker)[:limit]


def _fuse(
    snap: Any,
    bm25: _Ranked,
    vec: _Ranked,
    limit: int,
    recency: bool,
    params: SearchParams,
    given: dict[str, float],
    qvec: np.ndarray | None = None,
) -> list[SearchHit]:
    rankings = {"bm25": bm25.ids, "vector": vec.ids}
    weights = {n: given.get(n, 1.0) for n in rankings}
    fused = normalise_scores(
        rrf_fuse(rankings, k=params.k, weights=weights), k=params.k, weights=weights
    )
    fused = [h for h in fused if h.score > 0]
    base = {h.id: h.score for h in fused}
    factor: dict[str, float] = {}
    if recency:
        now_us = time.time() * 1_000_000
        ends = {**bm25.age, **vec.age}
        ages = {h.id: (now_us - ends[h.id]) / 1_000_000 for h in fused}
        fused = apply_recency(
            fused, ages, half_life_days=params.half_life_days, weight=params.recency_weight
        )
        factor = {h.id: (h.score / base[h.id] if base[h.id] else 1.0) for h in fused}
    table = snap.table(TABLE)
    hits: list[SearchHit] = []
    for h in fused:
        row = table.get(h.id)
        if row is None:  # not live in this snapshot (cannot happen with a consistent index)
            continue
        hits.append(
            SearchHit(
                id=h.id,
                score=round(h.score, 6),
                breakdown={
                    "bm25_rank": h.ranks["bm25"],
                    "bm25_score": bm25.scores.get(h.id),
                    "vector_rank": h.ranks["vector"],
                    "vector_score": vec.scores.get(h.id),
                    "rrf_score": round(base[h.id], 6),
                    "recency": round(factor[h.id], 6) if recency else None,
                    "score": round(h.score, 6),
                },
                row=row,
                snapshot=snap,
                query_vector=qvec,
            )
        )
        if len(hits) == limit:
            break
    return hits
