"""The search's per-shard kernels (memlake.search.index.kernels, decision 2502): numba's and
numpy's give the same ids, the same float32 scores bit for bit and the same passages, on random
and edge-case inputs and through whole searches; the switch picks numpy where numba is missing
or not cached, and a cache built ahead loads in a fresh process without a compile."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from memlake.config import KernelSettings, Settings, kernel_settings
from memlake.errors import ConfigurationError
from memlake.search.hybrid import search
from memlake.search.index import kernels
from memlake.search.index.kernels import numpy_twins
from memlake.search.query.params import SearchParams
from tests.integration.test_search_index import HashEmbedder, T, make, put, state
from tests.support.tiny_layout import tiny_ivf_layout

ROOT = Path(__file__).resolve().parents[2]


def same(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype, (x.dtype, y.dtype)
        np.testing.assert_array_equal(x, y)


def _runs(rng: np.random.Generator, size: int, terms: int, tf: np.ndarray) -> tuple[Any, ...]:
    """Postings of `terms` terms over `size` docs as runs: sorted docs a term, some terms with
    none (empty runs), saturated tf drawn from `tf` (few values: many equal scores)."""
    docs, sat, lo, hi, at = [], [], [], [], 0
    for _ in range(terms):
        m = int(rng.integers(0, size + 1)) if size and rng.random() > 0.2 else 0
        docs.append(np.sort(rng.choice(size, m, replace=False)).astype(np.int32))
        sat.append(rng.choice(tf, m).astype(np.float32))
        lo.append(at)
        at += m
        hi.append(at)
    join = np.concatenate
    return (join(docs + [np.zeros(0, np.int32)]), join(sat + [np.zeros(0, np.float32)]),
            np.array(lo, np.int64), np.array(hi, np.int64))  # fmt: skip


def _bm25_case(rng: np.random.Generator, n: int, fmt1: bool, ties: bool) -> tuple[Any, ...]:
    terms = int(rng.integers(1, 6))
    tf = np.array([0.25, 0.5]) if ties else rng.random(50) + 0.01
    per = rng.integers(1, 5, n)
    p_first = np.zeros(n + 1, np.int64)
    np.cumsum(per, out=p_first[1:])
    e = _runs(rng, n, terms, tf)
    if fmt1:
        p, p_first = (e[0][:0], e[1][:0], e[2], e[2]), np.zeros(0, np.int64)
    else:
        p = _runs(rng, int(p_first[-1]), terms, tf)
    w = (np.ones(terms) if ties else rng.random(terms) * 3).astype(np.float32)
    return n, *e, *p, w, p_first, _p_doc(p_first)


def _p_doc(p_first: np.ndarray) -> np.ndarray:
    n = max(len(p_first) - 1, 0)
    return np.repeat(np.arange(n), np.diff(p_first)).astype(np.int32)


def compiled_top(compiled: ModuleType, *args: Any, small: bool = False) -> Any:
    """The compiled bm25_top given zeros to sum passages in (`small`: too few, so it takes
    its own), which it must leave as zeros."""
    p_first = args[10]
    scratch = np.zeros(0 if small or not len(p_first) else int(p_first[-1]) + 3, np.float32)
    got = compiled.bm25_top(*args, scratch)
    assert not scratch.any()
    return got


def _zeros(case: tuple[Any, ...]) -> np.ndarray:
    return np.zeros(int(case[10][-1]) if len(case[10]) else 0, np.float32)


def same_bm25(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    """bm25_top's results alike: the top docs, their scores, their best passages' scores and
    those passages."""
    same(a, b)


@pytest.mark.parametrize("seed", range(40))
def test_bm25_top_is_numpys(compiled: ModuleType, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = [0, 1, 2, 7, 300][seed % 5]
    case = _bm25_case(rng, n, fmt1=seed % 7 == 3, ties=seed % 2 == 0)
    mask = rng.random(n) > [0.0, 0.3, 1.0][seed % 3]  # none, some, all docs dead
    for agg in numpy_twins.AGG.values():
        for masked in (False, True):
            for k in (1, 3, 30, n + 5):
                for total in (float(case[9].sum()), 0.0, 1.7):
                    args = (*case, agg, 0.35, 0.5, total, mask, masked, k, 0.0)
                    got = compiled_top(compiled, *args, small=k == 3)
                    same_bm25(numpy_twins.bm25_top(*args), got)


@pytest.mark.parametrize("seed", range(6))
def test_bm25_top_of_thousands_of_docs_is_numpys(compiled: ModuleType, seed: int) -> None:
    """The compiled top list keeps a heap of the k best (the twin partitions): thousands of
    docs with few distinct scores, so the heap's root is displaced and ties cross the cut."""
    rng = np.random.default_rng(100 + seed)
    case = _bm25_case(rng, 5000, fmt1=False, ties=seed % 2 == 0)
    mask = rng.random(5000) > 0.2
    for k in (1, 2, 7, 30, 100, 4999):
        for masked in (False, True):
            args = (*case, 3, 0.5, 0.5, float(case[9].sum()), mask, masked, k, 0.0)
            same_bm25(numpy_twins.bm25_top(*args), compiled_top(compiled, *args))


def _skewed_case(rng: np.random.Generator, n: int, ties: bool) -> tuple[Any, ...]:
    """A query as real ones are: one or two rare heavy terms (idf 2-6, few postings) and
    common light ones (idf < 0.2, postings in most docs and passages), so that pruning the
    light ones can keep the k best."""
    per = rng.integers(1, 25, n)
    p_first = np.zeros(n + 1, np.int64)
    np.cumsum(per, out=p_first[1:])
    tf = np.array([0.25, 0.5, 0.75]) if ties else rng.random(50) * 0.98 + 0.01
    parts = []
    weights = []
    for heavy in [True] * int(rng.integers(1, 3)) + [False] * int(rng.integers(1, 4)):
        share = rng.uniform(0.005, 0.05) if heavy else rng.uniform(0.6, 1.0)
        parts.append(share)
        weights.append(rng.uniform(2, 6) if heavy else rng.uniform(0, 0.2))
    order = rng.permutation(len(parts))  # heavy terms anywhere in the query
    e, p = [], []
    for size, runs in ((n, e), (int(p_first[-1]), p)):
        for i in order:
            m = int(size * parts[i])
            runs.append((np.sort(rng.choice(size, m, replace=False)).astype(np.int32),
                         rng.choice(tf, m).astype(np.float32)))  # fmt: skip

    def joined(runs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[Any, ...]:
        hi = np.cumsum([len(d) for d, _ in runs]).astype(np.int64)
        lo = hi - [len(d) for d, _ in runs]
        return (np.concatenate([d for d, _ in runs]), np.concatenate([t for _, t in runs]),
                lo.astype(np.int64), hi)  # fmt: skip

    w = np.asarray(weights, np.float32)[order]
    return n, *joined(e), *joined(p), w, p_first, _p_doc(p_first)


def _skewed_world(rng_seed: int, seed: int) -> tuple[Any, np.ndarray, float]:
    """A skewed case (3,000 or 8,000 docs, ties every third seed), a mask and the total idf."""
    rng = np.random.default_rng(rng_seed)
    case = _skewed_case(rng, [3000, 8000][seed % 2], ties=seed % 3 == 0)
    mask = rng.random(case[0]) > [0.0, 0.3, 0.9][seed % 3]
    return case, mask, float(case[9].sum())


def _pruned_ran(
    case: Any, agg: int, total: float, mask: Any, masked: bool, k: int, floor: float
) -> bool:
    """Did the pruned path itself give the answer (not the dense one)? It sums passages in
    zeros it must leave as zeros."""
    from memlake.search.index.kernels import numba_bm25

    zeros = _zeros(case)
    tried = numba_bm25._pruned(*case, agg, 0.5, total, mask, masked, k, floor, zeros)
    assert not zeros.any()
    return bool(tried[0])


@pytest.mark.parametrize("seed", range(12))
def test_bm25_top_pruned_is_numpys(compiled: ModuleType, seed: int) -> None:
    """Queries whose light terms can be pruned (the compiled twin scores only the docs that
    can make the k best): the same docs, scores and passages as summing every posting."""
    case, mask, total = _skewed_world(200 + seed, seed)
    pruned = 0
    for agg in (0, 1, 3):
        for k in (1, 10, 30):
            for masked in (False, True):
                args = (*case, agg, 0.5, 0.5, total, mask, masked, k, 0.0)
                same_bm25(numpy_twins.bm25_top(*args), compiled_top(compiled, *args))
                pruned += _pruned_ran(case, agg, total, mask, masked, k, 0.0)
    assert pruned  # the pruned path ran (and matched), not only the dense one


@pytest.mark.parametrize("seed", range(12))
def test_bm25_top_floor_keeps_every_doc_at_or_above_it(compiled: ModuleType, seed: int) -> None:
    """A search's floor (decision 2509): the compiled twin may leave out docs scoring below
    it, never one at or above it. The docs, scores and passages at or above the floor are the
    twin's; the pruned path takes the floor (it returns fewer docs)."""
    case, mask, total = _skewed_world(300 + seed, seed)
    fewer = 0
    for agg in (0, 1, 3):
        for k in (10, 30, 100):
            for masked in (False, True):
                args = (*case, agg, 0.5, 0.5, total, mask, masked, k)
                want = numpy_twins.bm25_top(*args, 0.0)
                if not len(want[1]):
                    continue
                for floor in (float(want[1][len(want[1]) // 3]), float(want[1][0]), 1.0):
                    got = compiled_top(compiled, *args, floor)
                    keep_w, keep_g = want[1] >= floor, got[1] >= floor
                    same_bm25(tuple(x[keep_w] for x in want), tuple(x[keep_g] for x in got))
                    ran = _pruned_ran(case, agg, total, mask, masked, k, floor)
                    fewer += ran and len(got[0]) < len(want[0])
    assert fewer  # the floor cut some lists short, and what it kept was the twin's


@pytest.mark.parametrize("seed", range(8))
def test_the_pruned_paths_kth_best_is_numpys_partition(compiled: ModuleType, seed: int) -> None:
    """The pruned path's k-th best lower bound (a heap of the k best, decision 2509) is the
    value np.partition gives: random, tied and sorted bounds, k from 1 to all of them."""
    from memlake.search.index.kernels import numba_bm25

    rng = np.random.default_rng(400 + seed)
    m = [1, 7, 300, 30000][seed % 4]
    for values in (
        rng.random(m) + 0.01,
        rng.integers(1, 5, m) / 4,
        np.sort(rng.random(m)) + 0.01,
        np.sort(rng.random(m))[::-1] + 0.01,
    ):
        bounds = np.concatenate([values, rng.random(5)]).astype(np.float32)  # past m: ignored
        for k in {1, min(m, 2), min(m, 30), max(1, m // 2), m}:
            want = np.partition(bounds[:m], m - k)[m - k]
            assert numba_bm25._kth_best(bounds, m, k) == want


def test_bm25_top_breaks_ties_by_doc(compiled: ModuleType) -> None:
    """Five docs with the same score for three places: the lowest doc numbers, in order."""
    n, docs = 8, np.array([1, 2, 4, 5, 6], np.int32)
    sat = np.full(5, 0.5, np.float32)
    lo, hi = np.array([0], np.int64), np.array([5], np.int64)
    empty = (np.zeros(0, np.int32), np.zeros(0, np.float32), lo * 0, lo * 0)
    args = (n, docs, sat, lo, hi, *empty, np.ones(1, np.float32), np.zeros(0, np.int64),
            np.zeros(0, np.int32), 0, 0.5, 0.5, 1.0, np.zeros(0, bool), False, 3, 0.0)  # fmt: skip
    for module in (numpy_twins, compiled):
        top, scores, best, _ = module.bm25_top(*args, np.zeros(0, np.float32))
        assert top.tolist() == [1, 2, 4] and scores.tolist() == [0.5] * 3


@pytest.mark.parametrize("seed", range(20))
def test_best_passages_are_numpys(compiled: ModuleType, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    p_first = np.zeros(n + 1, np.int64)
    np.cumsum(rng.integers(1, 5, n), out=p_first[1:])
    scores = rng.choice([0.0, 0.0, 0.5, 1.0, 1.25], int(p_first[-1])).astype(np.float32)
    docs = rng.choice(n, int(rng.integers(0, n + 1))).astype(np.int64)  # repeats too
    for s in (scores, np.zeros(0, np.float32), np.zeros_like(scores)):
        same(
            (numpy_twins.best_passages(p_first, docs, s),),
            (compiled.best_passages(p_first, docs, s),),
        )


@pytest.mark.parametrize("seed", range(30))
def test_top_docs_are_numpys(compiled: ModuleType, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    chunk_doc = np.sort(rng.integers(0, n, n * 3)).astype(np.int32)  # rows of each doc
    chunk_passage = rng.integers(-1, 9, len(chunk_doc)).astype(np.int32)
    m = int(rng.integers(0, len(chunk_doc) + 1))
    rows = rng.choice(len(chunk_doc), m, replace=False).astype(np.int64)
    exact = rng.choice(np.linspace(-0.2, 0.9, 7 if seed % 2 else 500), m).astype(np.float32)
    for want in {m, max(1, m // 2), 1}:
        for k in (1, 5, 100):
            args = (rows, exact, want, chunk_doc, chunk_passage, n, k)
            same(numpy_twins.top_docs(*args), compiled.top_docs(*args))


@pytest.mark.parametrize("seed", range(30))
def test_plan_lists_are_numpys(compiled: ModuleType, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 40, int(rng.integers(0, 6)))
    starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    every = rng.choice(np.linspace(-1, 1, 9 if seed % 2 else 1000), int(starts[-1]))
    every = every.astype(np.float32)
    if seed % 3 == 0 and len(every):  # signed zeros rank alike; NaN (a damaged centroid) never
        every[rng.random(len(every)) < 0.2] = -0.0
        every[rng.random(len(every)) < 0.2] = 0.0
        every[rng.random(len(every)) < 0.05] = np.nan
    for budget in (0, 1, 10, len(every), len(every) + 5):
        for least, most in ((0, 128), (2, 8), (0, 1)):
            mosts = np.full(len(sizes), most, np.int64)
            mosts[::2] *= 2  # a merged shard may take more (ivf.weight_of)
            args = (every, starts, numpy_twins.plan_cut(every, budget), least, mosts)
            same(numpy_twins.plan_lists(*args), compiled.plan_lists(*args))


def test_plan_lists_takes_each_shards_best_by_list_number_on_ties(compiled: ModuleType) -> None:
    """Equal centroid scores at and above the cut: each shard's lowest list numbers first, as
    a full sort of its scores gives them (the kernel sorts only those at or above the cut)."""
    every = np.array([0.5, 0.9, 0.5, 0.5, 0.1, 0.9, 0.9, 0.5], np.float32)
    starts = np.array([0, 4, 8], np.int64)
    for module in (numpy_twins, compiled):
        cut = numpy_twins.plan_cut(every, 5)
        lists, counts = module.plan_lists(every, starts, cut, 0, np.array([2, 8], np.int64))
        assert counts.tolist() == [2, 3] and lists.tolist() == [1, 0, 1, 2, 3]


@pytest.mark.parametrize("seed", range(10))
def test_widen_is_numpys_astype_bit_for_bit(compiled: ModuleType, seed: int) -> None:
    """float16 rows widened to float32: every one of the 65,536 halves (zeros, subnormals,
    infinities, NaN payloads, both signs), random unit rows and none."""
    rng = np.random.default_rng(seed)
    every_half = rng.permutation(np.arange(1 << 16, dtype=np.uint16)).reshape(-1, 64)
    unit = rng.standard_normal((50, 384)).astype(np.float32)
    unit = (unit / np.linalg.norm(unit, axis=1, keepdims=True)).astype(np.float16).view(np.uint16)
    for halves in (every_half, unit, unit[:0]):
        want = halves.view(np.float16).astype(np.float32)
        for module in (numpy_twins, compiled):
            got = module.widen(halves, numpy_twins.HALF_FLOATS)
            assert got.dtype == np.float32 and got.shape == want.shape
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("seed", range(5))
def test_gather_widen_is_numpys_gather_and_astype_bit_for_bit(
    compiled: ModuleType, seed: int
) -> None:
    """The re-score's rows gathered and widened in one kernel: every one of the 65,536 halves
    (zeros, subnormals, infinities, NaN payloads, both signs) and unit rows, in any order, a
    row more than once, none; a row outside the vectors is an IndexError in both."""
    rng = np.random.default_rng(seed)
    every_half = rng.permutation(np.arange(1 << 16, dtype=np.uint16)).reshape(-1, 64)
    unit = rng.standard_normal((300, 384)).astype(np.float32)
    unit = (unit / np.linalg.norm(unit, axis=1, keepdims=True)).astype(np.float16).view(np.uint16)
    for halves in (every_half, unit):
        picks = (
            rng.permutation(len(halves)),
            rng.integers(0, len(halves), 50),
            np.array([len(halves) - 1, 0, 0], np.int64),
            np.zeros(0, np.int64),
        )
        for rows in picks:
            want = halves[rows].view(np.float16).astype(np.float32)
            for module in (numpy_twins, compiled):
                got = module.gather_widen(halves, np.asarray(rows, np.int64))
                assert got.dtype == np.float32 and got.shape == want.shape
                np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
        for bad in ([len(halves)], [0, -1]):
            for module in (numpy_twins, compiled):
                with pytest.raises(IndexError):
                    module.gather_widen(halves, np.asarray(bad, np.int64))


@pytest.fixture
def tenant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Shards of every kind a search meets: IVF ones, flat ones, the tail."""
    tiny_ivf_layout(monkeypatch)
    lake, ctx = make(tmp_path, HashEmbedder())
    ids = [put(lake, f"note number{i} about topic{i % 3}. More on colour{i % 5}.\n\nAnd "
                     f"shade{i % 4} of topic{i % 2}") for i in range(27)]  # fmt: skip
    assert len(state(lake).shards) >= 3
    return ids, ctx


def _search_all(ctx: Any, ids: list[str]) -> list[Any]:
    out = []
    for agg in ("episode", "max", "top2", "mix"):
        for vec_agg in ("max", "top2"):
            p = SearchParams(bm25_agg=agg, vec_agg=vec_agg)  # type: ignore[arg-type]
            for query, kw in [("topic1 colour2", {}), ("shade3 number7", {}), ("colour4", {}),
                              ("topic0 shade1", {"allowed_ids": set(ids[::3])}),
                              ("nothing matches", {})]:  # fmt: skip
                hits = search(ctx.lake, ctx.services.search, T, query=query, limit=12,
                              recency=False, params=p, **kw)  # fmt: skip
                out.append([(h.id, h.score, h.breakdown, h.passage) for h in hits])
    return out


def test_searches_are_the_same_with_either_kernels(
    compiled: ModuleType, tenant: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids, ctx = tenant
    got = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("MEMLAKE_KERNELS", mode)
        kernels.reset()
        assert kernels.which() == mode
        got[mode] = _search_all(ctx, ids)
    assert got["numba"] == got["numpy"]  # ids, scores, breakdowns and passages
    assert sum(len(hits) for hits in got["numpy"]) > 100


def test_the_setting_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLAKE_KERNELS", "fortran")
    for read in (kernel_settings, Settings.from_env):
        with pytest.raises(ConfigurationError, match="MEMLAKE_KERNELS"):
            read()
    monkeypatch.setenv("MEMLAKE_KERNELS", "NumPy")
    assert Settings.from_env().kernels == "numpy"


def test_numpy_when_asked_when_numba_is_missing_and_when_not_cached(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kernels.reset()
    assert kernels.load(KernelSettings("numpy", str(tmp_path))) is numpy_twins
    kernels.reset()
    auto = KernelSettings("auto", str(tmp_path / "empty"))
    assert kernels.load(auto) is numpy_twins  # nothing cached: auto never compiles
    assert "warm-kernels" in kernels.report()["reason"]
    kernels.reset()
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` fails
    with caplog.at_level(logging.WARNING):
        assert kernels.load(KernelSettings("numba", str(tmp_path))) is numpy_twins
    assert "numba kernels unavailable" in caplog.text
    kernels.reset()


def test_auto_never_makes_a_search_wait(
    compiled: ModuleType, tenant: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default cache holds the kernels (the fixture put them there): auto hands out
    numpy's until a search is done, then loads numba's on their own thread."""
    ids, ctx = tenant
    monkeypatch.setenv("MEMLAKE_KERNELS", "auto")
    kernels.reset()
    assert kernels.active() is numpy_twins and not kernels._loading
    search(ctx.lake, ctx.services.search, T, query="topic1", limit=5, recency=False)
    assert kernels._loading  # started when the search was done
    assert kernels.wait() is compiled
    kernels.reset()


def test_a_cache_built_ahead_loads_in_a_fresh_process_without_compiling(
    compiled: ModuleType, tmp_path: Path
) -> None:
    """The Lambda image's way: the cache built at image build time (here: the default one) is
    read-only, copied to a writable directory at the first search, loaded from there."""
    seed = Path(kernel_settings().cache_dir)
    env = {**os.environ, "MEMLAKE_KERNELS": "auto", "MEMLAKE_KERNEL_CACHE_SEED": str(seed),
           "MEMLAKE_KERNEL_CACHE_DIR": str(tmp_path / "writable"),
           "PYTHONPATH": str(ROOT / "shared")}  # fmt: skip
    report = _fresh_report(env)
    assert report["reason"] == "numba kernels loaded" and report["compiled"] == 0, report
    assert list((tmp_path / "writable").glob("memlake-kernels-*.json"))
    # another library's njit first (bm25s's package makes some): numba is set up for this
    # host's CPU, the portable cache would not load, so auto keeps numpy rather than compile
    assert "set up for this CPU" in _fresh_report(env, "import bm25s; ")["reason"]


def _fresh_report(env: dict[str, str], first: str = "") -> dict[str, Any]:
    """kernels.report() of a new process with this environment (`first`: code run before)."""
    child = (
        "from memlake.search.index import kernels; import json; print(json.dumps(kernels.report()))"
    )
    out = subprocess.run([sys.executable, "-c", first + child], env=env, capture_output=True,
                         text=True, check=True, timeout=120)  # fmt: skip
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def test_a_cache_warmed_once_loads_without_compiling(tmp_path: Path) -> None:
    """A fresh machine's (CI's, the Lambda image's) one `warm-kernels` leaves every kernel's
    own signature in the cache: bm25_top compiles best_passages for its own argument types
    first, and the next process compiled best_passages again (the warning "1 compiled
    although ... says they are cached", and seconds of a Lambda's first load)."""
    level = kernels.host_levels()[0]
    env = {**os.environ, "MEMLAKE_KERNELS": "auto", "PYTHONPATH": str(ROOT / "shared")}
    env.pop("MEMLAKE_KERNEL_CACHE_SEED", None)
    warm = [sys.executable, "-m", "memlake", "warm-kernels", "--level", level, "--json",
            "--cache-dir", str(tmp_path)]  # fmt: skip
    subprocess.run(warm, env=env, capture_output=True, text=True, check=True, timeout=300)
    env["MEMLAKE_KERNEL_CACHE_DIR"] = str(tmp_path)
    report = _fresh_report(env)
    assert report["reason"] == "numba kernels loaded" and report["compiled"] == 0, report


def test_the_stopwords_are_bm25s_own() -> None:
    """Copied (memlake.search.index.stopwords) so that tokenising never imports bm25s, whose
    package imports numba and sets it up for this host's CPU before the kernels can."""
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    from memlake.search.index.stopwords import STOPWORDS_EN_PLUS as ours

    assert ours == tuple(STOPWORDS_EN_PLUS)
