"""The probe plan's int8 first pass (memlake.search.index.ivf_coarse, decision 2507): the plan
it gives is the plan of every float32 centroid score, list for list; its integer products are
exact in both kernels; and the kernels load for the best CPU level the host runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from memlake.config import KernelSettings
from memlake.search.index import ivf, ivf_coarse, kernels
from memlake.search.index.kernels import numpy_twins
from memlake.search.index.shard import Shard
from tests.unit.test_partial_candidates import _vector_side
from tests.unit.test_probe_plan import _queries, shards  # noqa: F401  (a fixture)

ROOT = Path(__file__).resolve().parents[2]


class _Index:
    """What plan_probes reads of an Ivf: centroids, their int8 copy, nlist and weight."""

    def __init__(self, centroids: np.ndarray) -> None:
        self.centroids = centroids
        self.nlist = len(centroids)
        self.weight = 1.0
        self.quantised = ivf_coarse.Quantised(centroids)


def _clustered(rng: np.random.Generator, n: int, dim: int, spread: float) -> np.ndarray:
    """Unit centroids around a few directions: many near-equal scores near any cut."""
    hubs = rng.standard_normal((8, dim))
    x = hubs[rng.integers(0, 8, n)] + spread * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _reference(indexes: list[_Index], q: np.ndarray, budget: int, most: int) -> list[Any]:
    """The plan from every float32 centroid score (what plan_probes did before 2507)."""
    scores = [i.centroids @ q[0] for i in indexes]
    starts = np.zeros(len(scores) + 1, np.int64)
    np.cumsum([len(s) for s in scores], out=starts[1:])
    mosts = np.full(len(scores), most, np.int64)
    lists, counts = numpy_twins.plan_lists(np.concatenate(scores), starts, budget, 0, mosts)
    out, at = [], 0
    for s, n in zip(scores, counts.tolist(), strict=True):
        out.append((lists[at : at + n], s[lists[at : at + n]]))
        at += n
    return out


@pytest.fixture
def int8_plans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every plan below takes the int8 pass (however few centroids); counts its calls."""
    monkeypatch.setattr(ivf, "PLAN_INT8_FROM", 0)
    calls: list[int] = []
    real = ivf_coarse.scores

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(ivf_coarse, "scores", counted)
    return calls


@pytest.mark.parametrize("dim,spread", [(384, 0.3), (384, 1.5), (64, 0.05), (1536, 0.5)])
def test_the_plan_is_the_plan_of_every_float32_score(
    dim: int, spread: float, int8_plans: list[int]
) -> None:
    rng = np.random.default_rng(dim + int(spread * 10))
    sizes = [700, 64, 1300, 5, 400]
    indexes = [_Index(_clustered(rng, n, dim, spread)) for n in sizes]
    checked = 0
    for trial in range(25):
        q = _clustered(rng, 1, dim, spread)
        if trial % 5 == 0:
            q = indexes[2].centroids[trial : trial + 1].copy()  # a centroid itself: ties near 1
        budget = int(rng.integers(1, sum(sizes)))
        most = int(rng.choice([3, 40, 10**6]))
        got = ivf.plan_probes(indexes, q, budget, 0, most)  # type: ignore[arg-type]
        want = _reference(indexes, q, budget, most)
        for p, (lists, scores) in zip(got, want, strict=True):
            np.testing.assert_array_equal(p.lists[0], lists)
            np.testing.assert_allclose(p.scores[0], scores, rtol=1e-6, atol=1e-7)
            checked += len(lists)
    assert checked > 1000 and len(int8_plans) == 25


def test_only_centroids_near_the_cut_are_scored_in_float32(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(7)
    centroids = _clustered(rng, 20_000, 384, 1.0)
    q = _clustered(rng, 1, 384, 1.0)[0]
    [scores] = ivf_coarse.scores([centroids], [ivf_coarse.Quantised(centroids)], q, 500)
    scored = np.isfinite(scores)
    assert 500 <= scored.sum() < 0.25 * len(centroids)  # the point of it
    exact = centroids @ q
    cut = np.sort(exact)[::-1][499]
    assert scored[exact >= cut].all()  # every centroid at or above the cut has its score
    np.testing.assert_allclose(scores[scored], exact[scored], rtol=1e-6, atol=1e-7)


def test_few_centroids_or_a_plan_that_may_go_below_the_cut_score_every_centroid(
    int8_plans: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    indexes = [_Index(_clustered(rng, 50, 32, 0.5)) for _ in range(2)]
    q = _clustered(rng, 1, 32, 0.5)
    for budget, least in [(10, 2), (100, 0), (0, 0)]:  # a shard's least, every list, none
        ivf.plan_probes(indexes, q, budget, least, 10**6)  # type: ignore[arg-type]
    assert not int8_plans
    ivf.plan_probes(indexes, q, 10, 0, 10**6)  # type: ignore[arg-type]
    assert len(int8_plans) == 1
    monkeypatch.setattr(ivf, "PLAN_INT8_FROM", 101)  # more than the 100 centroids
    ivf.plan_probes(indexes, q, 10, 0, 10**6)  # type: ignore[arg-type]
    assert len(int8_plans) == 1


def test_a_search_over_shards_is_the_same_with_the_int8_pass(
    shards: list[Shard],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Real IVF shards, the vector side of a search across them (sides.Sides): the same
    docs, scores and passages with the plan's int8 pass as with every float32 score."""
    monkeypatch.setattr(ivf, "PLAN_PER_SHARD", 12)
    calls: list[int] = []
    real = ivf_coarse.scores
    monkeypatch.setattr(ivf_coarse, "scores", lambda *a: calls.append(1) or real(*a))
    for q in _queries(shards, 24):
        monkeypatch.setattr(ivf, "PLAN_INT8_FROM", 10**9)
        every = _vector_side(shards, q)
        assert not calls
        monkeypatch.setattr(ivf, "PLAN_INT8_FROM", 0)
        assert _vector_side(shards, q) == every
        assert calls
        calls.clear()


def _int8_cases(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    cases = []
    for n, dim in [(0, 384), (1, 1), (5000, 384), (17, 1536), (3, 4100)]:
        codes = rng.integers(-127, 128, (n, dim)).astype(np.int8)
        cases.append((codes, rng.integers(-127, 128, dim).astype(np.int8)))
    full = np.full((4, 4100), 127, np.int8)  # the largest sums, both signs
    cases += [(full, np.full(4100, 127, np.int8)), (full, np.full(4100, -127, np.int8))]
    return cases


def test_coarse_dots_are_exact_and_bounds_the_same_in_both_kernels(compiled: ModuleType) -> None:
    rng = np.random.default_rng(11)
    for codes, q8 in _int8_cases(rng):
        want = (codes.astype(np.int64) @ q8.astype(np.int64)).astype(np.int32)
        terms = rng.random((4, len(codes))) * np.array([[1e-3], [1e-2], [1.0], [1.0]])
        args = (codes, q8, terms, 0.004, 1.0, 0.01, 384 * 2.0**-23)
        for module in (numpy_twins, compiled):
            got = module.coarse_dots(codes, q8)
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got, want)
        same = [m.coarse_bounds(*args) for m in (numpy_twins, compiled)]
        for a, b in zip(*same, strict=True):
            assert a.dtype == b.dtype == np.float64
            np.testing.assert_array_equal(a, b)  # bit for bit


def test_the_level_is_the_best_the_host_runs_that_the_cache_holds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache, seed = tmp_path / "cache", tmp_path / "seed"
    cache.mkdir()
    seed.mkdir()
    s = KernelSettings("auto", str(cache), str(seed))

    def mark(place: Path, level: str) -> None:
        (place / kernels.MARKER.format(kernels._fingerprint(level))).write_text("{}")

    monkeypatch.setattr(kernels, "host_levels", lambda: ["x86-64-v3", "generic"])
    assert kernels.choose_level(s, compiling=False) == "generic"  # nothing cached (numpy)
    assert kernels.choose_level(s, compiling=True) == "x86-64-v3"
    mark(cache, "generic")
    assert kernels.choose_level(s, compiling=False) == "generic"
    mark(seed, "x86-64-v3")  # the image's seed holds the better one
    assert kernels.choose_level(s, compiling=False) == "x86-64-v3"
    monkeypatch.setattr(kernels, "host_levels", lambda: ["generic"])  # an older CPU
    assert kernels.choose_level(s, compiling=False) == "generic"
    assert kernels.choose_level(s, compiling=True) == "generic"
    named = KernelSettings("auto", str(cache), cpu_name="skylake")  # NUMBA_CPU_NAME
    assert kernels.choose_level(named, compiling=False) == "skylake"
    assert kernels.build_levels()[-1] == "generic"


def test_the_portable_level_gives_numpys_results_in_a_process_of_its_own(
    compiled: ModuleType,
) -> None:
    """This process runs the best level (x86-64-v3 here); the other level's kernels are held
    to numpy's in a child that loads them from the same cache (warm-kernels built both)."""
    if kernels.report().get("level") == "generic":
        pytest.skip("this process runs the generic level already")
    child = """
import json, numpy as np
from memlake.search.index import kernels
from memlake.search.index.kernels import numpy_twins as twin
nk = kernels.wait()
rng = np.random.default_rng(5)
ok = []
for n in (0, 1, 3000):
    codes = rng.integers(-127, 128, (n, 384)).astype(np.int8)
    q8 = rng.integers(-127, 128, 384).astype(np.int8)
    ok.append(bool((nk.coarse_dots(codes, q8) == twin.coarse_dots(codes, q8)).all()))
    args = (codes, q8, rng.random((4, n)), 0.004, 1.0, 0.01, 1e-4)
    bounds = [m.coarse_bounds(*args) for m in (nk, twin)]
    ok += [bool(np.array_equal(a, b)) for a, b in zip(*bounds)]
    every = rng.random(n).astype(np.float32)
    starts = np.array([0, n // 3, n], np.int64)
    most = np.array([5, 50], np.int64)
    plans = [m.plan_lists(every, starts, 40, 0, most) for m in (nk, twin)]
    ok += [bool(np.array_equal(a, b)) for a, b in zip(*plans)]
print(json.dumps({"ok": all(ok), **kernels.report()}))
"""
    env = {**os.environ, "MEMLAKE_KERNELS": "numba", "NUMBA_CPU_NAME": "generic",
           "PYTHONPATH": str(ROOT / "shared")}  # fmt: skip
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True,
                         check=True, timeout=300)  # fmt: skip
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["level"] == "generic" and got["ok"], got


def test_the_error_bound_holds_where_the_rounding_is_aimed_at_the_query() -> None:
    """The bound is Cauchy-Schwarz's: loose for most centroids (a tenth of it passes the plan
    tests above), tight for a query along a centroid's own rounding error, where the error is
    nearly all of it."""
    rng = np.random.default_rng(21)
    centroids = _clustered(rng, 300, 384, 1.0)
    made = ivf_coarse.quantise(centroids)
    worst = 0.0
    for i in range(0, 300, 30):
        off = centroids[i] - made.codes[i] * made.terms[0, i]  # centroid i's rounding
        for q in (off / np.linalg.norm(off), _clustered(rng, 1, 384, 1.0)[0]):
            q = q.astype(np.float32)
            low, high = ivf_coarse.estimate(made, ivf_coarse.Query8.of(q))
            exact = centroids @ q
            assert ((low <= exact) & (exact <= high)).all()
            approx, bound = (low + high) / 2, (high - low) / 2
            worst = max(worst, float((np.abs(exact - approx) / bound).max()))
    assert worst > 0.5  # a bound of half the formula would fail above
