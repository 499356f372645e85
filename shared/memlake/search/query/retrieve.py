"""One retriever's side of a search over the loaded shards: per-shard filter masks, BM25 and
vector top lists (episode scores from their passages, memlake.search.query.params.SearchParams says
how), merged across shards into one ranked list with each episode's best passage."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from memlake.search.index import kernels
from memlake.search.index.kernels.numpy_twins import AGG
from memlake.search.index.shard import Shard
from memlake.search.index.shard_bm25 import NO_RUNS
from memlake.search.index.shard_source import Postings
from memlake.search.index.state import ShardInfo

if TYPE_CHECKING:
    from memlake.search.query.params import SearchParams


@dataclass
class Ranked:
    ids: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)  # normalised (theory), 0..1
    raw: dict[str, float] = field(default_factory=dict)  # BM25 share / best cosine
    best: dict[str, float] = field(default_factory=dict)  # the best passage's own score
    #: where each one is: (shard, doc, best passage), read only for the entries asked
    #: (`passage`, `end`): a search shows ~limit of its ~candidates entries
    where: dict[str, tuple[Shard, int, int]] = field(default_factory=dict)

    def passage(self, eid: str) -> tuple[int, int] | None:
        """Content offsets of the entry's best passage (None: unknown, or not an entry)."""
        at = self.where.get(eid)
        return None if at is None else at[0].passage_span(at[2])

    def end(self, eid: str) -> int | None:
        """When the entry's episode ended (us; None: not an entry)."""
        at = self.where.get(eid)
        return None if at is None else int(at[0].t_end[at[1]])


def mask_of(
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


#: the best passage of each doc at the given positions of a part's docs (-1: none)
PassagesOf = Callable[[np.ndarray], np.ndarray]


class Found:
    """One retriever's per-shard top lists, merged as arrays (Python objects only for the final
    top k): best score first, ties by id. Scores are normalised to 0..1 (theory). A part's
    passages are an array, or a PassagesOf asked only for the docs that make the top k (BM25's
    best-passage pick costs a pass over each doc's passages: for ~k docs, not k a shard)."""

    def __init__(self) -> None:
        self.parts: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.passages_of: list[PassagesOf] = []

    def add(self, no: int, docs: Any, scores: Any, raw: Any, passages: Any, best: Any) -> None:
        if len(docs):
            self.parts.append((no, docs, scores, raw, best))
            of = passages if callable(passages) else np.asarray(passages).__getitem__
            self.passages_of.append(of)

    def _id(self, shards: list[Shard], part: np.ndarray, docs: np.ndarray, i: int) -> str:
        return shards[self.parts[int(part[i])][0]].id_list[int(docs[i])]

    def ranked(self, shards: list[Shard], k: int) -> Ranked:
        out = Ranked()
        if not self.parts:
            return out
        sizes = [len(p[1]) for p in self.parts]
        part = np.repeat(np.arange(len(sizes)), sizes)
        docs, scores, raw, best = (np.concatenate([p[i] for p in self.parts]) for i in range(1, 5))
        top = _best(scores, k, lambda i: self._id(shards, part, docs, i))
        # as Python lists at once: a numpy scalar an entry cost ~0.1 ms of a 20k search, and
        # each numpy call on a few entries ~2 us more after a pass over memory (performance.md)
        at, tops = top.tolist(), [c.tolist() for c in (part[top], docs[top], scores[top])]
        raws, bests = raw[top].tolist(), best[top].tolist()
        starts = [0, *itertools.accumulate(sizes)]
        wanted: dict[int, list[int]] = {}  # part -> the top's entries of that part
        for j, p in enumerate(tops[0]):
            wanted.setdefault(p, []).append(j)
        passages = [0] * len(at)
        for p, entries in wanted.items():  # one call a part: BM25's picks them for all at once
            of = np.asarray([at[j] - starts[p] for j in entries], np.int64)
            for j, passage in zip(entries, self.passages_of[p](of).tolist(), strict=True):
                passages[j] = passage
        picked = []
        for j, (p, d, score) in enumerate(zip(*tops, strict=True)):
            shard = shards[self.parts[p][0]]
            picked.append((-score, shard.id_list[d], at[j], shard, d, j))
        for neg, eid, _, shard, d, j in sorted(picked):
            out.ids.append(eid)
            out.scores[eid] = -neg
            out.raw[eid] = raws[j]
            out.best[eid] = bests[j]
            out.where[eid] = (shard, d, passages[j])
        return out


def _best(scores: np.ndarray, k: int, id_of: Callable[[int], str]) -> np.ndarray:
    """Positions of the k best scores, equal ones at the cut by id (so the same entries give
    the same k whatever else is there: a BM25 floor leaves out entries below it, 2509)."""
    if len(scores) <= k or k <= 0:
        return np.arange(len(scores) if k > 0 else 0)
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    above = np.flatnonzero(scores > kth)
    tied = np.flatnonzero(scores == kth)
    if len(above) + len(tied) > k:
        tied = np.array(sorted(tied.tolist(), key=id_of)[: k - len(above)], np.int64)
    return np.concatenate([above, tied])


def bm25_shard(
    shard: Shard,
    tids: list[int],
    idf: list[float],
    total: float,
    params: SearchParams,
    mask: np.ndarray | None,
    k: int,
    read: dict[str, Postings] | None = None,
    floor: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The k best docs by normalised BM25 among `mask`: (docs, scores, their best passages
    (-1: none scored), the best passage's normalised score). `read`: the postings of `tids`
    (Shard.read_postings), read here when None. `floor`: the search's k-th best score so far
    (decision 2509): docs below it may be left out. One kernel call does the shard's whole
    BM25 (kernels.bm25_top: compiled and without the GIL where numba is, decision 2502)."""
    run = kernels.active()
    passages = shard.has_passages and shard.n > 0
    p_runs = shard.posting_runs(tids, "p_", read) if passages else NO_RUNS
    p_first = shard.p_first if shard.has_passages else NO_RUNS[2]
    p_doc = shard.p_doc if shard.has_passages else NO_RUNS[0]
    scratch = _scratch(int(p_first[-1]) if len(p_first) else 0)
    try:
        got = run.bm25_top(
            shard.n,
            *shard.posting_runs(tids, "", read),
            *p_runs,
            np.asarray(idf, np.float32),
            p_first,
            p_doc,
            AGG[params.bm25_agg],
            float(params.mix),
            float(params.agg_decay),
            float(total),
            NO_MASK if mask is None else mask,
            mask is not None,
            k,
            float(floor),
            scratch,
        )
    except BaseException:
        _SCRATCH.zeros = None  # it may not be zeros any more
        raise
    top, scores, best, top_passage = got
    return top, scores, top_passage, best


#: each thread's zeros for BM25's passage sums (bm25_top leaves them zeros: decision 2509)
_SCRATCH = threading.local()


def _scratch(size: int) -> np.ndarray:
    buf: np.ndarray | None = getattr(_SCRATCH, "zeros", None)
    if buf is None or len(buf) < size:
        buf = np.zeros(size, np.float32)
        _SCRATCH.zeros = buf
    return buf


#: bm25_top's mask when there is none
NO_MASK = np.zeros(0, bool)
