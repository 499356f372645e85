"""Both retrievers over a search's shards, on two threads (decisions 1315, 1317, 1318).

A search's work is one BM25 task and one vector task per shard (memlake.search.query.retrieve,
memlake.search.index.shard.Shard.vector_candidates), ~0.3-1.2 ms each at 100k episodes. The
caller's thread runs every BM25 task, then joins the pool thread in taking the vector tasks
until none is left. The vector side's first step, the plan of its IVF probes across the shards
(ivf.plan_probes, decision 1303: a pass over every centroid, ~2 ms at 100k), is done once by the
first thread to take a vector task, waiting for the query vector if it is being embedded
(`query_vector.embed_ahead`): the pool thread plans while the caller runs BM25. faiss's scans,
the coarse step's matrix product and the compiled kernels release the GIL, so the two sides
overlap; sharing BM25 tasks would only make the threads wait for each other. A vector task gives
its shard's candidates with their code scores; the thread that completes the last one applies
one cutoff over all shards and re-scores exactly (`_finish_vectors`, decision 1318), beside the
BM25 tasks when those take longer. Over few shards the cutoff keeps a third of their candidates
at most (`rescore_across`, decision 2510). A shard held whole that alone gives as many code
candidates as the cutoff can keep is re-scored in its own task, from its own such candidate on
(`RESCORE_EARLY`, decision 2511): the cutoff is never below that, so the step after it, on one
thread while the other waits, only groups those rows. Over many shards, a vector task asks an
IVF shard for only a share of its candidates (`first_share`) and a shard whose every candidate
made the cutoff is asked again for all of them, so the candidates above the codes' cutoff are
those of asking every shard whole; the rows re-scored are the best of the candidates given by
code score times each row's gain (decision 2508). BM25 tasks run biggest shard first, each with
the floor of the ones done: the cand-th best score so far, below which its kernel may leave docs
out (decision 2509). Ranged shards' postings are read ahead, all at once (decision 1317). With
one core the threads take turns, as if run in sequence. Results merge in shard order, as a
sequential run would give them (Found.ranked breaks ties by id anyway). When the caller fails,
the pool thread stops taking tasks. Over ranged shards the caller takes vector tasks first; when
it completes the last one it hands the re-score to a helper and scores BM25 meanwhile, and once
BM25 is done its best docs are named to `ahead` (memlake.search.query.hits_ahead), so that a
cold search's hits' rows are read in the round of its re-score rows (decision 4401).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from memlake.pools import Helpers, Job, LazyPool
from memlake.search.index import ivf
from memlake.search.index.shard import Shard
from memlake.search.index.shard_source import Postings
from memlake.search.index.shard_vectors import Candidates, DocTop
from memlake.search.query.fusion import cosine_score
from memlake.search.query.hits_ahead import HitsAhead
from memlake.search.query.retrieve import Found, bm25_shard

if TYPE_CHECKING:
    from memlake.search.query.params import SearchParams

#: a shard joins the probe plan when its filter allows at least this share of its docs (dead
#: rows only, say); a selective filter keeps the shard's own NPROBE lists (decision 1303)
PLAN_ALLOWED = 0.9
#: pool threads helping searches (each search uses at most one beside its caller's thread)
HELPERS = 4
#: rows re-scored across all shards, in one shard's re-score depths (decision 1318), but at
#: most KEEP_SHARE of the shard-worths' depths (at least RESCORE_LEAST): over few shards the
#: cutoff otherwise keeps most candidates (20k episodes in 12 shard-worths: 2/3), and keeping
#: a third gave the same hits at 10k and 20k for half the rows re-scored (decision 2510)
RESCORE_ACROSS = 8
KEEP_SHARE = 1 / 3
RESCORE_LEAST = 2
#: a vector task first asks a shard for this many times its share of the rows re-scored
#: (`first_share`; k 1,920 -> 480 made faiss's scan of a 32k-doc shard 0.74 -> 0.55 ms)
FIRST_MARGIN = 2
#: a vector task re-scores a shard held whole that alone gives as many code candidates as
#: the cutoff across shards can keep, down to its own such candidate, on its thread: the
#: re-score after the cutoff, on one thread, then only groups them (decision 2511; False:
#: every candidate is re-scored after the cutoff, as before)
RESCORE_EARLY = True

#: the caller that completes the last vector task over ranged shards hands the re-score to a
#: helper and scores BM25 meanwhile (decision 4401; False: it re-scores, then scores BM25)
HAND_OFF = True

Task = tuple[str, int]  # ("bm25" | "vector", shard number)


def probe_plans(
    shards: list[Shard], masks: list[np.ndarray | None], qvec: np.ndarray
) -> dict[int, ivf.Probes]:
    """The IVF lists each shard probes, planned over every IVF shard whose filter allows at
    least PLAN_ALLOWED of its docs (ivf.plan_probes, decision 1303); the others, and a search
    with one such shard, probe their own NPROBE nearest lists."""
    planned = [
        no
        for no, (shard, mask) in enumerate(zip(shards, masks, strict=True))
        if shard.ivf_index() is not None and (mask is None or mask.mean() >= PLAN_ALLOWED)
    ]
    if len(planned) < 2:
        return {}
    q = np.ascontiguousarray(np.reshape(qvec, (1, -1)), dtype=np.float32)
    ivfs = [shards[no].ivf_index() for no in planned]
    return dict(zip(planned, ivf.plan_probes([i for i in ivfs if i is not None], q), strict=True))


class Sides:
    """One search's per-shard top lists of both retrievers."""

    def __init__(
        self,
        shards: list[Shard],
        masks: list[np.ndarray | None],
        params: SearchParams,
        cand: int,
        ahead: HitsAhead | None = None,
    ) -> None:
        self.shards, self.masks, self.params, self.cand = shards, masks, params, cand
        #: names the likely hits as each side knows them (their rows are read meanwhile)
        self.ahead = ahead
        self._caller = 0  # the thread running `run`
        self._finishing: Job | None = None  # the vector side's last step, handed to a helper
        self._bm25_tasks: list[Task] = []
        self.tids: list[list[int]] = []
        self.idf: list[float] = []
        self.total_idf = 0.0
        self.qvec: np.ndarray | None = None
        self.plans: dict[int, ivf.Probes] = {}
        self._planned = False
        self._plan_lock = threading.Lock()  # one thread plans, the others wait for its plan
        self._stopped = False
        self._vector_nos: list[int] = []
        self._vectors_left = 0
        self._left_lock = threading.Lock()
        self._share = 1.0
        self._across = float(RESCORE_ACROSS)
        self._fetching: dict[int, Future[dict[str, Postings]]] = {}
        self._lists_ahead: dict[int, Future[None]] = {}
        self._bm25_best = np.empty(0, np.float32)  # the best BM25 scores so far, up to cand
        self._bm25_floor = 0.0  # their cand-th best: the floor of the next BM25 task (2509)

    def run(
        self, term_ids: list[list[int]], idf: list[float], total_idf: float, qvec: Any
    ) -> tuple[Found, Found]:
        """(BM25 lists, vector lists): `term_ids` per shard and `idf` per query term (no
        terms: no BM25), `qvec` the query vector (None: no vector side), or a Future of it
        (embed_ahead: the BM25 tasks run while it is embedded; `self.qvec` has it after)."""
        self.tids, self.idf, self.total_idf, self.qvec = term_ids, idf, total_idf, qvec
        live = [no for no, m in enumerate(self.masks) if m is None or m.any()]
        tasks: list[Task] = []
        if idf:
            tasks += [("bm25", no) for no in live if any(t >= 0 for t in term_ids[no])]
        if qvec is not None:
            tasks += [("vector", no) for no in live]
        self._prefetch([no for side, no in tasks if side == "bm25"])
        done: dict[Task, Any] = {}
        ahead = [t for t in tasks if t[0] == "bm25"]
        # ranged shards last (their postings are read meanwhile), the biggest first: their
        # k best give the next shards a high floor (decision 2509)
        ahead.sort(key=lambda t: (self.shards[t[1]].lazy, -self.shards[t[1]].n))
        self._vector_nos = [no for side, no in tasks if side == "vector"]
        self._bm25_tasks = ahead
        docs = [self.shards[no].n for no in self._vector_nos]
        self._share = first_share(docs)
        self._across = rescore_across(docs)
        self._vectors_left = len(self._vector_nos)
        bm25, vector = _taker(ahead), _taker([("vector", no) for no in self._vector_nos])
        helpers = []
        if qvec is not None and len(tasks) > 1:  # help with the vector tasks only
            # one thread warm (CPU: the GIL leaves no room for more); a ranged shard's vector
            # task mostly waits on its reads, so up to HELPERS of them read at once
            ranged = sum(1 for no in self._vector_nos if self.shards[no].lazy)
            for _ in range(max(1, min(HELPERS, ranged))):
                helpers.append(_HELPERS.start(partial(self._work, vector, done)))
        # ranged shards' vector tasks first when there are any: their probed lists are read
        # in the round of the postings read ahead, not one round after it (a helper started
        # cold may begin only once the caller's BM25 waited for those postings; decision 4401)
        first, then = (vector, bm25) if self._ranged_vectors() else (bm25, vector)
        self._caller = threading.get_ident()
        try:
            self._work(first, done)
            if first is bm25:
                self._bm25_ahead(ahead, done)
            self._work(then, done)
            if then is bm25:
                self._bm25_ahead(ahead, done)
            if self._finishing is not None and not self._finishing.join():
                self._finish_vectors(self._vector_nos, done)  # no helper was free: here
            if isinstance(self.qvec, Future):  # no vector task planned: the hits still show it
                self.qvec = self.qvec.result()
        except BaseException:
            self._stopped = True  # the pool thread takes no further task and is freed
            raise
        for helper in helpers:
            helper.join()  # taken back unstarted when every task is done
        found = {"bm25": Found(), "vector": Found()}
        for side, no in tasks:  # in task order: as a sequential run adds them
            got = done[(side, no)]
            if got is not None:
                found[side].add(no, *got)
        return found["bm25"], found["vector"]

    def _ranged_vectors(self) -> bool:
        return any(self.shards[no].lazy for no in self._vector_nos)

    def _plan_once(self) -> None:
        """The probe plan across shards, by the first thread to need it (the others wait for
        it); a failed plan is tried again by the next thread, which raises it too."""
        with self._plan_lock:
            if self._planned:
                return
            q = self.qvec.result() if isinstance(self.qvec, Future) else self.qvec
            assert q is not None  # vector tasks exist only with a query vector
            self.plans = probe_plans(self.shards, self.masks, q)
            self.qvec = q
            self._planned = True
            self._lists_ahead = {
                no: _PREFETCH.get().submit(self._read_lists, no, plan)
                for no, plan in self.plans.items()
                if self.shards[no].lazy and len(plan)
            }

    def _read_lists(self, no: int, plan: ivf.Probes) -> None:
        """A ranged shard's planned lists, read for its vector task: every such shard's at
        once once the plan is made (the tasks run a few at a time; decision 4401)."""
        index = self.shards[no].ivf_index()
        if index is not None:
            index.ensure(plan.lists[0])

    def _work(self, take: Callable[[], Task | None], done: dict[Task, Any]) -> None:
        while not self._stopped and (task := take()) is not None:
            side, no = task
            if side == "bm25":
                done[task] = self._bm25(no)
                continue
            done[task] = self._vector(no)
            with self._left_lock:
                self._vectors_left -= 1
                last = self._vectors_left == 0
            if not last:
                continue
            # every shard's candidates are in: this thread re-scores them all; the caller's
            # hands it to a helper when BM25 tasks wait for it, so that a cold search's BM25
            # side, and the reads of its hits' rows, run while the re-score rows are read
            mine = threading.get_ident() == self._caller
            if HAND_OFF and mine and self._bm25_tasks and self._ranged_vectors():
                finish = partial(self._finish_vectors, self._vector_nos, done)
                self._finishing = _HELPERS.start(finish)
            else:
                self._finish_vectors(self._vector_nos, done)

    def _bm25_ahead(self, tasks: list[Task], done: dict[Task, Any]) -> None:
        """Name the BM25 side's likely hits, its tasks done (ranged shards only: a search over
        shards held whole is warm, and its hits' rows mostly are)."""
        if self.ahead is not None and any(self.shards[no].lazy for _, no in tasks):
            tops = ((t[1], done[t][0], done[t][1]) for t in tasks if t in done)
            self.ahead.bm25(self.shards, tops)

    def _prefetch(self, nos: list[int]) -> None:
        """Start reading the postings of every ranged shard at once, each on a thread of its
        own (a cold search over 30 shards read them one shard after the other: ~0.8 s of its
        ~2 s at 100k episodes; their tf normalisation runs on these threads too)."""
        ranged = [no for no in nos if self.shards[no].lazy]
        if ranged:
            pool = _PREFETCH.get()
            for no in ranged:
                self._fetching[no] = pool.submit(self.shards[no].read_postings, self.tids[no])

    def _bm25(self, no: int) -> tuple[Any, ...]:
        shard, p = self.shards[no], self.params
        read = None
        ahead = self._fetching.pop(no, None)
        if ahead is not None and not ahead.cancel() and ahead.exception() is None:
            read = ahead.result()  # a failed read is retried below, and reported from there
        got = bm25_shard(
            shard, self.tids[no], self.idf, self.total_idf, p, self.masks[no], self.cand, read,
            self._bm25_floor,
        )  # fmt: skip
        top, scores, passages, best = got
        self._raise_floor(scores)
        return top, scores, scores, passages, best

    def _raise_floor(self, scores: np.ndarray) -> None:
        """Keep the cand best BM25 scores of the shards done; once there are cand of them, the
        worst is the floor: a doc below it cannot make the search's cand best (Found.ranked),
        so the next shards' kernels may leave it out. Only the caller's thread runs BM25
        tasks, one after the other."""
        best = np.concatenate([self._bm25_best, scores])
        if len(best) > self.cand:
            best = np.partition(best, len(best) - self.cand)[len(best) - self.cand :]
        self._bm25_best = best
        if self.cand and len(best) == self.cand:
            self._bm25_floor = float(best.min())

    def _vector(self, no: int) -> Candidates | None:
        """A vector task: the shard's candidates (the first of two steps, decision 1318)."""
        self._plan_once()  # the probes are planned across shards first
        if self._stopped:
            return None
        plan = self.plans.get(no)
        if plan is not None and not len(plan):
            return None  # none of the globally best lists is this shard's (decision 1303)
        ahead = self._lists_ahead.pop(no, None)
        if ahead is not None and not ahead.cancel():
            ahead.exception()  # read (a failed read is read again below, and raised there)
        assert self.qvec is not None  # vector tasks exist only with a query vector
        shard = self.shards[no]
        got = shard.vector_candidates(self.qvec, self.masks[no], self.cand, plan, self._share)
        if RESCORE_EARLY and got is not None and got.kind == "codes" and not shard.lazy:
            # the cutoff keeps at most `keep` of all candidates, so it is at or above the
            # keep-th best of any shard's: from there on, rows are re-scored whatever it is
            keep = round(self._across * shard.depth_most(self.cand))
            if 0 < keep <= len(got.scores):
                at = len(got.scores) - keep
                shard.rescore_early(got, float(np.partition(got.scores, at)[at]))
        return got

    def _finish_vectors(self, nos: list[int], done: dict[Task, Any]) -> None:
        """The second step: one cutoff over every shard's code scores, the `rescore_across` x
        (one shard's re-score depth)-th best, and each shard's candidates from it re-scored
        and grouped into docs (ranged shards in parallel: their rows are read by ranges)."""
        got = {no: c for no in nos if (c := done[("vector", no)]) is not None}
        # a shard that gave only its best candidates (partial) may hold more rows above the
        # cutoff when all of them are at or above it: asked again whole. The others' rows not
        # given score at most their last, below the cutoff, which is at most the one over
        # every shard asked whole: so the cutoff is then that one, and so are the rows above.
        # That holds for the codes' own scores; the rows re-scored are then the cutoff's count
        # of the best by gained score (decision 2508) among those given
        partial = [n for n, c in got.items() if c.partial and len(c.coded)]
        coded = _cutoff(got, self._across, gained=False) if partial else np.inf  # (none: none)
        again = [n for n in partial if got[n].coded.min() >= coded]
        for no in again:
            deeper = self.shards[no].vector_candidates(
                got[no].q[0], self.masks[no], self.cand, self.plans.get(no)
            )
            assert deeper is not None  # it had candidates before
            got[no] = deeper
        cutoff = _cutoff(got, self._across, gained=True)

        def finish(no: int) -> DocTop:
            shard, c = self.shards[no], got[no]
            top = shard.vector_finish(c, self.cand, cutoff)
            if top is None:  # too few docs: this shard searched alone, deeper
                top = shard.vector_top(c.q[0], self.masks[no], self.cand, self.plans.get(no))
            return top

        tops: dict[int, DocTop] = {}
        ranged = [no for no in got if self.shards[no].lazy]
        if len(ranged) > 1:
            tops.update(zip(ranged, _PREFETCH.get().map(finish, ranged), strict=True))
        for no in got:
            if no not in tops:
                tops[no] = finish(no)
        for no, top in _scored(tops, self.params).items():
            done[("vector", no)] = top


def _scored(tops: dict[int, DocTop], p: SearchParams) -> dict[int, tuple[Any, ...]]:
    """Each shard's (docs, score, best cosine, passages, score): the docs' cosines mapped to
    0..1 (cosine_score, `vec_agg` top2 adding the second best's share), for every shard at
    once (a numpy call a shard costs microseconds more after a pass over memory than warm)."""
    if not tops:
        return {}
    sims = np.concatenate([top[1] for top in tops.values()])
    norm = cosine_score(sims, p.cos_floor)
    if p.vec_agg == "top2":
        second = np.concatenate([top[2] for top in tops.values()])
        norm = np.minimum(1.0, norm + p.agg_decay * cosine_score(second, p.cos_floor))
    out, at = {}, 0
    for no, (docs, best, _, passages) in tops.items():
        end = at + len(docs)
        out[no] = (docs, norm[at:end], best, passages, norm[at:end])
        at = end
    return out


def first_share(docs: list[int]) -> float:
    """The share of its code candidates a vector task first asks of a shard, over shards of
    these sizes: FIRST_MARGIN x what one cutoff across them keeps of every candidate (each
    shard asks its depth per ivf.weight_of; the cutoff keeps RESCORE_ACROSS such depths), so
    that a shard holds more rows above the cutoff only when they gather in it. 1: all (20k
    episodes in 12 shard-worths; 300k in ~73, 16/73). It counts RESCORE_ACROSS depths kept
    even where `rescore_across` keeps fewer, so small tenants are still asked whole: first
    asks of 2/3 at 20k cost +0.6-0.75 ms, paired (decision 2510)."""
    worths = sum(ivf.weight_of(n) for n in docs)
    return min(1.0, FIRST_MARGIN * RESCORE_ACROSS / worths) if worths else 1.0


def rescore_across(docs: list[int]) -> float:
    """How many shards' re-score depths one cutoff keeps over shards of these sizes:
    RESCORE_ACROSS, or KEEP_SHARE of their shard-worths (ivf.weight_of) when that is fewer,
    but not fewer than RESCORE_LEAST."""
    worths = sum(ivf.weight_of(n) for n in docs)
    return min(float(RESCORE_ACROSS), max(float(RESCORE_LEAST), KEEP_SHARE * worths))


def _cutoff(got: dict[int, Candidates], across: float, gained: bool) -> float:
    """The code score from which candidates are re-scored: the `across` x (one shard's
    re-score depth)-th best of every shard's (-inf: all of them), by the scores that rank
    them (`gained`) or by the codes' own."""
    codes = [c.scores if gained else c.coded for c in got.values() if c.kind == "codes"]
    every = np.concatenate(codes) if codes else np.empty(0, np.float32)
    keep = round(across * max((c.depth for c in got.values()), default=0))
    if 0 < keep < len(every):
        return float(np.partition(every, len(every) - keep)[len(every) - keep])
    return -np.inf


def _taker(tasks: list[Task]) -> Callable[[], Task | None]:
    """The next task not taken yet, from any thread (None: all taken)."""
    lock = threading.Lock()
    it = iter(tasks)

    def take() -> Task | None:
        with lock:
            return next(it, None)

    return take


_HELPERS = Helpers(HELPERS, "memlake-search")
#: shards whose postings are read at once (each round's GETs go through ranges' own pool)
PREFETCH_THREADS = 32  # a shard's postings and its lists ahead, for 16 ranged shards at once
_PREFETCH = LazyPool(PREFETCH_THREADS, "memlake-prefetch")


def prestart() -> None:
    """Start the read-ahead threads now, in the background (memlake.pools.LazyPool.prestart):
    a cold search's postings and lists are then asked for at once, not a thread start apart."""
    _PREFETCH.prestart()
