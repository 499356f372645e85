"""What a search is asked and what it answers: the tuning knobs (SearchParams), the bounds the
tools' input models use, and one hit (SearchHit). Shared by the query path's modules and the
runtime that runs a search (memlake.search.hybrid), so none of them imports the other for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

MAX_LIMIT = 50
MAX_QUERY_CHARS = 2_000


@dataclass(frozen=True)
class SearchParams:
    """Tuning knobs (docs/decisions/0301 and 1201 have the measurements)."""

    fusion: Literal["convex", "rrf"] = "convex"
    #: convex: BM25's share (the vector gets 1 - alpha; `weights` scale both)
    alpha: float = 0.6
    #: convex: "theory" (BM25 over the query's total idf, cosine from `cos_floor`; absolute)
    #: or "minmax" (per query over the candidates; relative, Bruch et al.'s baseline)
    norm: Literal["theory", "minmax"] = "theory"
    cos_floor: float = 0.2
    #: an episode's BM25: "episode" (whole), "max" (best passage), "top2" (best + decay *
    #: second best passage), "mix" (mix * episode + (1 - mix) * best passage)
    bm25_agg: Literal["episode", "max", "top2", "mix"] = "mix"
    #: an episode's vector score: "max" (best passage) or "top2" (best + decay * second)
    vec_agg: Literal["max", "top2"] = "max"
    agg_decay: float = 0.5
    mix: float = 0.5
    weights: dict[str, float] = field(default_factory=lambda: {"bm25": 1.0, "vector": 1.0})
    candidates: int = 30  # per retriever, before fusion (at least `limit`)
    #: rrf only: k, and BM25's weight scaled by its confidence (its top score over the query's
    #: total idf) relative to confidence_ref, clipped
    k: float = 1.0
    confidence_ref: float | None = 0.2
    confidence_clip: tuple[float, float] = (0.25, 4.0)
    half_life_days: float = 30.0
    recency_weight: float = 0.1


DEFAULT_PARAMS = SearchParams()


@dataclass(frozen=True)
class SearchHit:
    id: str
    score: float  # 0..1, absolute (comparable across queries) with the default fusion
    breakdown: dict[str, Any]
    row: dict[str, Any]
    #: what the search saw, for shaping results (best passages): the snapshot the row was
    #: read from and the query's vector (None when vectors were not searched)
    snapshot: Any = field(default=None, compare=False, repr=False)
    query_vector: np.ndarray | None = field(default=None, compare=False, repr=False)
    #: offsets in row["content"] of the best matching content passage (None: unknown, or the
    #: title/summary/tags passage matched best)
    passage: tuple[int, int] | None = None
    #: the index shard and doc the search found it at (its passage vectors are there:
    #: memlake.search.query.hit_vectors); None when unknown
    located: tuple[Any, int] | None = field(default=None, compare=False, repr=False)
