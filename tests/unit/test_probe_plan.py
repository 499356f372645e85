"""A search over several IVF shards plans its probes across them (decision 1303): one coarse
step over every shard's centroids, the globally best lists probed, each shard only its share;
filters stay exact, a top-k is never short, scores are exact cosines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlake.search.index import ivf, ivf_coarse
from memlake.search.index.shard import Doc, Shard
from memlake.search.index.shard_build import build
from memlake.search.query import sides
from tests.integration.test_search_index import HashEmbedder, found, make, put, state
from tests.support.tiny_layout import tiny_ivf_layout
from tests.unit.test_vector_scan_sq8 import DIM, TOPICS, _exact, _mixtures, _unit

ROWS_PER_DOC = 16
DOCS = 300  # 4,800 rows a shard: above IVF_MIN_ROWS, 37 lists
#: topics far from TOPICS: the off-topic shard's
OTHER = _unit(np.random.default_rng(99).normal(size=(64, DIM)))


def _docs(topics: np.ndarray, seed: int) -> list[Doc]:
    rng = np.random.default_rng(seed)
    vectors = _mixtures(rng, topics, DOCS * ROWS_PER_DOC).reshape(DOCS, ROWS_PER_DOC, DIM)
    one = [(0, 1, ["word"])] * ROWS_PER_DOC
    return [
        Doc(f"s{seed}-{i:04d}", i, i, i, None, ["word"], vectors[i], passages=one)
        for i in range(DOCS)
    ]


def _shard(topics: np.ndarray, seed: int) -> Shard:
    shard = Shard.from_bytes(build(_docs(topics, seed), model="m", dim=DIM))
    assert shard.ivf_index() is not None
    return shard


@pytest.fixture(scope="module")
def shards() -> list[Shard]:
    """Three shards over overlapping topic windows (a tenant's topics drift), and one whose
    passages are about other topics altogether."""
    near = [_shard(TOPICS[lo : lo + 32], seed) for seed, lo in ((1, 0), (2, 16), (3, 32))]
    return [*near, _shard(OTHER, 4)]


def _queries(shards: list[Shard], n: int = 30) -> np.ndarray:
    """Close to a stored passage of one of the on-topic shards, or loosely about their topics."""
    rng = np.random.default_rng(11)
    near = np.concatenate([s.vectors[rng.integers(0, len(s.vectors), n // 3)] for s in shards[:3]])
    near = _unit(near + rng.normal(0, 1 / np.sqrt(DIM), near.shape))
    return np.concatenate([near, _mixtures(rng, TOPICS, n)])


def _merged(shards: list[Shard], q: np.ndarray, plans: list[ivf.Probes] | None, k: int = 10):
    """(shard, doc) pairs of the global top k and their scores, as query.search merges them."""
    found = []
    for no, shard in enumerate(shards):
        probes = None if plans is None else plans[no]
        if probes is not None and not len(probes):
            continue  # no list planned: the shard is not searched
        docs, scores, _, _ = shard.vector_top(q, None, k, probes)
        found += [(float(s), no, int(d)) for d, s in zip(docs, scores, strict=True)]
    found.sort(key=lambda t: (-t[0], t[1], t[2]))
    return [(no, d) for _, no, d in found[:k]], [s for s, _, _ in found[:k]]


def _exact_global(shards: list[Shard], q: np.ndarray, k: int = 10):
    found = []
    for no, shard in enumerate(shards):
        docs, scores = _exact(shard, q, None, k)
        found += [(float(s), no, int(d)) for d, s in zip(docs, scores, strict=True)]
    found.sort(key=lambda t: (-t[0], t[1], t[2]))
    return [(no, d) for _, no, d in found[:k]], [s for s, _, _ in found[:k]]


def _plan(shards: list[Shard], q: np.ndarray, budget: int, least: int = 0, most: int = 10**6):
    ivfs = [s.ivf_index() for s in shards]
    return ivf.plan_probes(ivfs, q.reshape(1, -1), budget, least, most)  # type: ignore[arg-type]


def _nlists(shards: list[Shard]) -> list[int]:
    return [s.ivf_index().nlist for s in shards]  # type: ignore[union-attr]


def test_a_plan_covering_every_list_is_the_exact_search(
    shards: list[Shard], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ivf, "NPROBE", 1)  # the shards' own probing alone would miss
    total = sum(_nlists(shards))
    for q in _queries(shards, 9):
        plans = _plan(shards, q, total)
        assert [len(p) for p in plans] == _nlists(shards)
        got, scores = _merged(shards, q, plans)
        want, want_scores = _exact_global(shards, q)
        assert got == want
        np.testing.assert_allclose(scores, want_scores, rtol=0, atol=1e-5)


def test_the_plan_takes_the_globally_best_lists(shards: list[Shard]) -> None:
    q = _queries(shards, 3)[0]
    plans = _plan(shards, q, 20, least=1, most=6)
    every = [s.ivf_index().centroids @ q for s in shards]  # type: ignore[union-attr]
    for p, scores in zip(plans, every, strict=True):
        assert 1 <= len(p) <= 6
        np.testing.assert_array_equal(p.lists[0], np.argsort(-scores, kind="stable")[: len(p)])
        np.testing.assert_allclose(p.scores[0], scores[p.lists[0]], rtol=1e-6)
    uncapped = _plan(shards, q, 20)
    assert sum(len(p) for p in uncapped) == 20
    cut = np.sort(np.concatenate(every))[::-1][19]
    for p in uncapped:
        assert (p.scores[0] >= cut).all()


def test_recall_at_10_across_shards_with_the_chosen_budget(shards: list[Shard]) -> None:
    """The share of all lists the chosen budget probes at 100k episodes (PLAN_PER_SHARD of a
    tier-2 shard's 640 lists), spent where the neighbours are."""
    share = ivf.PLAN_PER_SHARD / ivf.nlist_for(4096 * 20)
    budget = round(sum(_nlists(shards)) * share)
    assert 0 < budget < sum(_nlists(shards)) / 8
    same, lists = 0, 0
    queries = _queries(shards)
    for q in queries:
        plans = _plan(shards, q, budget, most=ivf.PLAN_MOST)
        lists += sum(len(p) for p in plans)
        got, scores = _merged(shards, q, plans)
        for (no, d), score in zip(got, scores, strict=True):  # exact cosines of a row of d
            s = shards[no]
            assert np.abs(s.vectors[s.chunk_doc == d] @ q - score).min() < 1e-5
        same += len(set(got) & set(_exact_global(shards, q)[0]))
    assert lists == budget * len(queries)
    assert same / (10 * len(queries)) >= 0.95


def test_an_off_topic_shard_gets_fewer_probes(shards: list[Shard]) -> None:
    """Queries about one shard's own passages: that shard gets its lists, the shard of other
    topics a few (its centroids score at noise level)."""
    budget = sum(_nlists(shards)) // 8
    for no in range(3):
        sizes = np.array(
            [[len(p) for p in _plan(shards, q, budget)] for q in shards[no].vectors[::97][:40]]
        )
        mean = sizes.mean(axis=0)
        assert mean[no] == mean.max() and mean[no] > 2 * mean[3]
        assert mean[3] < budget / 5  # less than an even share
        assert (sizes[:, 3] == 0).any()  # and sometimes not searched at all


@pytest.mark.parametrize("exact_below", [0, ivf.EXACT_BELOW])
def test_filters_are_exact_and_never_short_under_planned_probes(
    shards: list[Shard], monkeypatch: pytest.MonkeyPatch, exact_below: int
) -> None:
    monkeypatch.setattr(ivf, "EXACT_BELOW", exact_below)
    shard = shards[0]
    nlist = _nlists(shards)[0]
    q = _queries(shards, 3)[0]
    best = np.full(shard.n, -np.inf)
    np.maximum.at(best, shard.chunk_doc, shard.vectors @ q)
    every_third = np.arange(shard.n) % 3 != 0
    far = np.zeros(shard.n, bool)
    far[np.argsort(best)[:12]] = True  # the allowed docs are the farthest from the query
    for mask in (every_third, far):
        for few in (1, 3):  # lists planned: fewer rows than asked, or fewer allowed rows
            planned = _plan(shards, q, 1, least=few)[0]
            assert len(planned) == few
            docs, _, _, _ = shard.vector_top(q, mask, 10, planned)
            assert len(docs) == 10 and mask[docs].all()  # widened until 10 allowed docs
        every = _plan(shards, q, sum(_nlists(shards)))[0]
        assert len(every) == nlist
        docs, scores, _, _ = shard.vector_top(q, mask, 10, every)
        want, want_scores = _exact(shard, q, mask, 10)
        if mask is every_third or exact_below:
            assert docs.tolist() == want
            np.testing.assert_allclose(scores, want_scores, rtol=0, atol=1e-5)
        else:  # the farthest docs: PQ codes (decision 1316) rank them coarsely, re-scored
            assert len(set(docs.tolist()) & set(want)) >= 8 and mask[docs].all()
            assert (np.diff(scores) <= 0).all() and scores[0] == pytest.approx(want_scores[0])


def test_a_planned_search_probes_exactly_the_planned_lists(shards: list[Shard]) -> None:
    held = ivf.Ivf(shards[1]._ivf_arrays, DIM)  # assembled afresh: no list added yet
    q = _queries(shards, 3)[:1]
    scores = held.centroids @ q[0]
    worst = np.argsort(scores)[:2]  # lists a search of its own would never probe first
    planned = ivf.Probes(worst[None].astype(np.int64), scores[worst][None].astype(np.float32))
    _, idx = held.search(q, 50, 1, None, planned)
    rows = idx[0][idx[0] >= 0]
    inside = np.concatenate([held._slice(int(no))[0] for no in worst])
    assert len(rows) == min(50, len(inside)) and np.isin(rows, inside).all()
    filled = [no for no in range(held.nlist) if held.invlists.list_size(no)]
    assert filled == sorted(worst.tolist())


def test_the_search_plans_only_over_unfiltered_ivf_shards(
    shards: list[Shard], monkeypatch: pytest.MonkeyPatch
) -> None:
    q = _queries(shards, 3)[0]
    assert sides.probe_plans(shards[:1], [None], q) == {}  # one IVF shard: its own NPROBE
    masks: list[np.ndarray | None] = [None, np.arange(DOCS) > 0, np.arange(DOCS) % 2 == 0, None]
    monkeypatch.setattr(ivf, "PLAN_PER_SHARD", 5)
    monkeypatch.setattr(ivf, "PLAN_SHARE", 0.0)  # the per-shard budget alone
    plans = sides.probe_plans(shards, masks, q)
    assert sorted(plans) == [0, 1, 3]  # a dead row is no filter; half the docs is one
    assert sum(len(p) for p in plans.values()) == 3 * 5


def test_a_lake_search_plans_across_its_ivf_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through query.search (tiny layout and IVF sizes): two IVF shards, planned probes passed
    to them, a shard with no planned list not searched, every episode still found."""
    tiny_ivf_layout(monkeypatch, nprobe=1)
    lake, ctx = make(tmp_path, HashEmbedder())
    ids = [put(lake, f"note number{i} about topic{i % 3}") for i in range(21)]
    assert sum(s.format >= 4 and s.docs >= 4 for s in state(lake).shards) == 2
    calls: list[ivf.Probes | None] = []
    real = Shard.vector_candidates

    def spy(self: Shard, query: np.ndarray, mask: object, k: int, probes: object, *rest: Any):
        calls.append(probes)  # type: ignore[arg-type]
        return real(self, query, mask, k, probes, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(Shard, "vector_candidates", spy)
    monkeypatch.setattr(ivf, "PLAN_PER_SHARD", 10**6)  # every list: the exact search
    for i, eid in enumerate(ids):
        calls.clear()
        assert found(ctx, f"number{i}")[0] == eid
        assert sum(p is not None for p in calls) == 2  # both IVF shards planned
    monkeypatch.setattr(ivf, "PLAN_PER_SHARD", 1)  # two lists in all
    monkeypatch.setattr(ivf, "PLAN_SHARE", 0.0)
    skipped = 0
    for i, eid in enumerate(ids):
        calls.clear()
        assert eid in found(ctx, f"number{i}")  # BM25 still finds it
        skipped += 3 - len(calls)
    assert skipped > 0


class _Wide:
    """What plan_probes reads of an Ivf, for a shard of `weight` shard-worths."""

    def __init__(self, rng: np.random.Generator, weight: float) -> None:
        c = rng.standard_normal((int(640 * weight), 16)).astype(np.float32)
        self.centroids = c / np.linalg.norm(c, axis=1, keepdims=True)
        self.nlist, self.weight = len(c), weight
        self.quantised = ivf_coarse.Quantised(self.centroids)


@pytest.mark.parametrize("worths", [11, 47, 48, 73])
def test_the_budget_widens_from_plan_wide_from_shard_worths(worths: int) -> None:
    """Below ivf.PLAN_WIDE_FROM shard-worths the plan probes PLAN_PER_SHARD lists a
    shard-worth; from there PLAN_PER_SHARD_WIDE (decision 2508: one cutoff across more shards
    keeps less of each)."""
    rng = np.random.default_rng(worths)
    shards = [_Wide(rng, 8.0) for _ in range(worths // 8)] + [_Wide(rng, 1.0)] * (worths % 8)
    q = rng.standard_normal((1, 16)).astype(np.float32)
    planned = sum(len(p) for p in ivf.plan_probes(shards, q))  # type: ignore[arg-type]
    per = ivf.PLAN_PER_SHARD if worths < ivf.PLAN_WIDE_FROM else ivf.PLAN_PER_SHARD_WIDE
    assert planned == per * worths
    assert ivf.PLAN_PER_SHARD_WIDE > ivf.PLAN_PER_SHARD


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ([4.0, 1.0], 576),  # 20,544 episodes just after a merge: 18% of 3,200 lists, not 280
        ([1.0], 115),  # one 4,096-doc shard: 18% of its 640 lists, not 56
        ([4.0, 4.0], 616),  # 32,768: 18% would be 922; the floor stops at PLAN_SHARE_MOST
        ([4.0] + [1.0] * 7, 616),  # 20,000's layout: PLAN_PER_SHARD x 11 = 616, as before
        ([8.0, 8.0], 896),  # above the floor's cap: PLAN_PER_SHARD x 16
    ],
)
def test_the_plan_probes_a_share_of_its_lists_whatever_the_layout(
    weights: list[float], expected: int
) -> None:
    """Per-shard budgets follow the LSM's state (a shard below WEIGHT_DOCS docs counts as
    one): the same docs in fewer, merged shards got fewer lists. The plan probes at least
    PLAN_SHARE of its lists, up to PLAN_SHARE_MOST (decision 2514)."""
    rng = np.random.default_rng(len(weights))
    shards = [_Wide(rng, w) for w in weights]
    q = rng.standard_normal((1, 16)).astype(np.float32)
    planned = sum(len(p) for p in ivf.plan_probes(shards, q))  # type: ignore[arg-type]
    assert planned == expected
