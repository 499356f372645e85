"""Score fusion for hybrid (BM25 + vector) search: convex combination of normalised scores,
weighted Reciprocal Rank Fusion, and helpers.

Convex combination (S. Bruch, S. Gai and A. Ingber, "An Analysis of Fusion Functions for Hybrid
Retrieval", ACM TOIS 42(1), 2023) scores a document by

    convex(d) = alpha * bm25_norm(d) + (1 - alpha) * vector_norm(d)

(0 for a retriever that did not return d). With a theoretical normalisation (each signal mapped
to 0..1 by bounds that do not depend on the query) the fused score is absolute: the same value
means the same strength of match for every query, which rank-based RRF cannot give. Bruch et al.
find convex combination at least as good as RRF and more sample-efficient to tune; the choice
here is measured (docs/decisions/1201-passage-bm25-and-score-fusion.md).

Reciprocal Rank Fusion (G. V. Cormack, C. L. A. Clarke and S. Buettcher, "Reciprocal Rank
Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009) scores a
document by its ranks alone, never by the retrievers' raw scores, which live on incomparable
scales (BM25 is unbounded, cosine is in [-1, 1]):

    rrf(d) = sum over retrievers r that returned d of  w_r / (k + rank_r(d))

with 1-based ranks and k = 60 as in the paper; a larger k flattens the difference between the
top ranks. Unweighted RRF is the case w_r = 1.

Everything here is a pure function over plain values; nothing does I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

DEFAULT_K = 60.0
SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class FusedHit:
    """One fused result. `ranks` maps every retriever name to the 1-based rank at which that
    retriever returned the id, or None if it did not return it."""

    id: str
    score: float
    ranks: dict[str, int | None]


def _check_k(k: float) -> None:
    if not (math.isfinite(k) and k > 0):
        raise ValueError(f"k must be a finite number > 0, not {k!r}")


def _resolve_weights(names: Iterable[str], weights: Mapping[str, float] | None) -> dict[str, float]:
    """Weight per retriever: 1.0 when not given. Weights for retrievers that are not present
    are ignored (a retriever may be switched off for one query), but every value is checked."""
    given: dict[str, float] = {}
    for name, w in (weights or {}).items():
        try:
            value = float(w)
        except (TypeError, ValueError):
            value = math.nan
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"weight for {name!r} must be a finite number >= 0, not {w!r}")
        given[name] = value
    return {name: given.get(name, 1.0) for name in names}


def _sort(hits: Iterable[FusedHit]) -> list[FusedHit]:
    """Best first; equal scores are ordered by id so results are deterministic (as tuples,
    not by a key function: a call a hit costs microseconds after a pass over memory; the
    position keeps equal entries in their order and the hits themselves uncompared)."""
    return [t[3] for t in sorted([(-h.score, h.id, i, h) for i, h in enumerate(hits)])]


def rrf_fuse(
    rankings: Mapping[str, Sequence[str]],
    *,
    k: float = DEFAULT_K,
    weights: Mapping[str, float] | None = None,
    limit: int | None = None,
) -> list[FusedHit]:
    """Fuse ranked id lists (best first, one per retriever name) with weighted RRF.

    Returns every id that any retriever returned, highest score first, ties broken by id
    (ascending), cut to `limit` if given. If a retriever lists an id twice, its first (best)
    position counts; later copies are ignored but still occupy their positions. Scores are summed
    with math.fsum, so ids with the same ranks under permuted retrievers tie exactly.
    Raises ValueError if k <= 0, a weight is negative or not finite, or limit < 0.
    """
    _check_k(k)
    if limit is not None and limit < 0:
        raise ValueError("limit must be >= 0")
    w = _resolve_weights(rankings.keys(), weights)
    ranks: dict[str, dict[str, int | None]] = {}
    for name, ids in rankings.items():
        for position, doc_id in enumerate(ids, start=1):
            slot = ranks.setdefault(doc_id, dict.fromkeys(rankings, None))
            if slot[name] is None:
                slot[name] = position
    hits = (
        FusedHit(
            doc_id,
            math.fsum(w[name] / (k + r) for name, r in by_name.items() if r is not None),
            by_name,
        )
        for doc_id, by_name in ranks.items()
    )
    fused = _sort(hits)
    return fused if limit is None else fused[:limit]


def bm25_share(score: Any, total_idf: float) -> Any:
    """BM25 scores (lucene variant: each query term adds at most its idf) as the share of the
    query's total idf they reach, 0..1: a theoretical normalisation, the same for every query.
    Works on a number or a numpy array (the search normalises per shard)."""
    if total_idf <= 0:
        return np.zeros_like(score, dtype=np.float32) if isinstance(score, np.ndarray) else 0.0
    return np.clip(score / np.float32(total_idf), 0.0, 1.0)


def cosine_score(cos: Any, floor: float) -> Any:
    """Cosines mapped to 0..1 from `floor` (what unrelated texts reach) up: (cos - c0) / (1 - c0),
    clipped; a theoretical normalisation like bm25_share (a number or a numpy array)."""
    # np.minimum / np.maximum: np.clip's values, without its three Python-level wrappers
    return np.minimum(np.maximum((cos - np.float32(floor)) / np.float32(1.0 - floor), 0.0), 1.0)


def minmax(scores: Mapping[str, float]) -> dict[str, float]:
    """Per-query min-max scaling over one retriever's candidates (Bruch et al.'s baseline): the
    best becomes 1.0 however weak it is, the worst 0.0 (all 1.0 when they are equal)."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi <= lo:
        return dict.fromkeys(scores, 1.0)
    return {k: (v - lo) / (hi - lo) for k, v in scores.items()}


def convex_fuse(
    scores: Mapping[str, Mapping[str, float]],
    *,
    alpha: float,
    weights: Mapping[str, float] | None = None,
) -> list[FusedHit]:
    """Fuse normalised (0..1) scores of two retrievers, "bm25" and "vector": alpha * bm25 +
    (1 - alpha) * vector, each scaled by its weight and the pair renormalised to sum 1 (a zero
    weight turns a retriever off; the other one's score is then used alone). Ranks in the hits
    are each id's 1-based position in its retriever's scores, best first (ties by id)."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], not {alpha!r}")
    w = _resolve_weights(scores.keys(), weights)
    share = {"bm25": alpha, "vector": 1.0 - alpha}
    raw = {name: share.get(name, 0.0) * w[name] for name in scores}
    total = math.fsum(raw.values())
    coef = {name: (v / total if total > 0 else 0.0) for name, v in raw.items()}
    ranks: dict[str, dict[str, int | None]] = {}
    for name, by_id in scores.items():
        ordered = sorted([(-score, doc_id) for doc_id, score in by_id.items()])
        for position, (_, doc_id) in enumerate(ordered, start=1):
            by = ranks.get(doc_id)
            if by is None:
                by = ranks[doc_id] = dict.fromkeys(scores)
            by[name] = position
    return _sort(
        [
            FusedHit(
                doc_id,
                min(1.0, math.fsum([coef[n] * scores[n][doc_id] for n, r in by.items() if r])),
                by,
            )
            for doc_id, by in ranks.items()
        ]
    )


def max_rrf_score(
    retrievers: Iterable[str], *, k: float = DEFAULT_K, weights: Mapping[str, float] | None = None
) -> float:
    """The best score weighted RRF can give: rank 1 in every retriever, sum(w) / (k + 1)."""
    _check_k(k)
    return math.fsum(_resolve_weights(retrievers, weights).values()) / (k + 1.0)


def normalise_scores(
    hits: Sequence[FusedHit],
    *,
    k: float = DEFAULT_K,
    weights: Mapping[str, float] | None = None,
) -> list[FusedHit]:
    """Rescale fused scores to 0..1 by dividing by `max_rrf_score` (same k and weights as fusion).

    1.0 means "ranked first by every retriever"; a document found only by one of two equally
    weighted retrievers can reach at most 0.5. Unlike min-max scaling over the result list,
    which always gives the top hit 1.0 however weak it is, this is an absolute scale, so one
    threshold (say 0.3) means the same for every query. Retrievers are read from the hits'
    `ranks`. Order is kept; an all-zero weight set gives all-zero scores.
    """
    if not hits:
        return []
    names = list(hits[0].ranks)
    best = max_rrf_score(names, k=k, weights=weights)
    if best <= 0.0:
        return [replace(h, score=0.0) for h in hits]
    return [replace(h, score=min(1.0, h.score / best)) for h in hits]


def recency_boost(
    score: float,
    age_seconds: float,
    *,
    half_life_days: float = 30.0,
    weight: float = 0.1,
) -> float:
    """Multiplicative recency factor: score * ((1 - weight) + weight * 0.5 ** (age / half_life)).

    A brand-new item keeps its full score; one `half_life_days` old keeps 1 - weight/2; a very
    old one keeps 1 - weight. Multiplicative rather than additive because it is scale-free (it
    works the same on raw RRF scores of ~0.03 and on normalised 0..1 scores, where an additive
    bonus would need retuning) and never lifts an irrelevant (score 0) item, and never raises a
    score, so normalised scores stay in 0..1. Negative ages (clock skew) count as 0.
    Raises ValueError unless half_life_days > 0 and 0 <= weight <= 1.
    """
    if not (math.isfinite(half_life_days) and half_life_days > 0):
        raise ValueError("half_life_days must be a finite number > 0")
    if not 0.0 <= weight <= 1.0:
        raise ValueError("weight must be in [0, 1]")
    age_days = max(0.0, age_seconds) / SECONDS_PER_DAY
    decay = 0.5 ** (age_days / half_life_days)
    return score * ((1.0 - weight) + weight * decay)


def apply_recency(
    hits: Iterable[FusedHit],
    age_seconds: Mapping[str, float],
    *,
    half_life_days: float = 30.0,
    weight: float = 0.1,
) -> list[FusedHit]:
    """`recency_boost` every hit whose id has an age in `age_seconds` and re-sort (best first,
    ties by id). Hits without a known age are left unchanged."""
    return _sort(
        replace(
            h,
            score=recency_boost(
                h.score, age_seconds[h.id], half_life_days=half_life_days, weight=weight
            ),
        )
        if h.id in age_seconds
        else h
        for h in hits
    )
