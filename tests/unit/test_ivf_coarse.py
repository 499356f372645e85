"""The probe plan from int8 centroids (memlake.search.index.ivf_coarse, decision 2507): each
score within its Cauchy-Schwarz bound of the float32 one, the plan that of every float32
score but for lists at the cut's edge, searches as good; the same scores from both kernels;
and the kernels load for the best CPU level the host runs."""

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
from tests.unit.test_probe_plan import OTHER, _queries, _shard, shards  # noqa: F401  (a fixture)

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
    """The plan from every float32 centroid score (what plan_probes does below the threshold)."""
    scores = [i.centroids @ q[0] for i in indexes]
    starts = np.zeros(len(scores) + 1, np.int64)
    np.cumsum([len(s) for s in scores], out=starts[1:])
    mosts = np.full(len(scores), most, np.int64)
    every = np.concatenate(scores)
    lists, counts = numpy_twins.plan_lists(
        every, starts, numpy_twins.plan_cut(every, budget), 0, mosts
    )
    out, at = [], 0
    for n in counts.tolist():
        out.append(lists[at : at + n])
        at += n
    return out


def _bound(centroids: np.ndarray, q: np.ndarray) -> np.ndarray:
    """|c.q - c'.q'| <= |c - c'| |q| + |c'| |q - q'| (and float32's rounding of c.q)."""
    made = ivf_coarse.quantise(centroids)
    back = made.codes * made.scale[:, None]
    q16, q_scale = ivf_coarse.query16(q)
    q_err = np.linalg.norm(q - q16 * q_scale)
    size = np.linalg.norm(q)
    c_err = np.linalg.norm(centroids - back, axis=1)
    return c_err * size + np.linalg.norm(back, axis=1) * q_err + len(q) * 2.0**-23 * size


@pytest.fixture
def int8_plans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every plan below scores int8 centroids (however few there are); counts those plans."""
    monkeypatch.setattr(ivf, "PLAN_INT8_FROM", 0)
    calls: list[int] = []
    real = ivf_coarse.scores

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(ivf_coarse, "scores", counted)
    return calls


@pytest.mark.parametrize("dim,spread", [(384, 0.3), (384, 1.5), (64, 0.05), (1536, 0.5)])
def test_each_score_is_within_its_bound_and_mostly_far_closer(dim: int, spread: float) -> None:
    rng = np.random.default_rng(dim + int(spread * 10))
    centroids = _clustered(rng, 600, dim, spread)
    made = ivf_coarse.quantise(centroids)
    worst, typical = 0.0, []
    for i in range(0, 600, 40):
        off = centroids[i] - made.codes[i] * made.scale[i]  # centroid i's rounding
        for q in (off / np.linalg.norm(off), _clustered(rng, 1, dim, spread)[0]):
            q = q.astype(np.float32)
            [got] = ivf_coarse.scores([ivf_coarse.Quantised(centroids)], q)
            error = np.abs(got.astype(np.float64) - centroids @ q)
            bound = _bound(centroids, q)
            assert (error <= bound).all()
            worst = max(worst, float((error / bound).max()))
            typical.append(float(np.median(error)))
    assert worst > 0.5  # along a centroid's rounding the error is most of the bound
    assert np.median(typical) < 0.002  # and elsewhere far less (unit vectors, scores ~0-1)


@pytest.mark.parametrize("dim,spread", [(384, 0.3), (384, 1.5), (1536, 0.5)])
def test_the_plan_differs_from_float32s_only_at_the_cut(
    dim: int, spread: float, int8_plans: list[int]
) -> None:
    """Lists taken by one plan and not the other score within twice their bound of the cut."""
    rng = np.random.default_rng(dim + int(spread * 10))
    sizes = [700, 64, 1300, 5, 400]
    indexes = [_Index(_clustered(rng, n, dim, spread)) for n in sizes]
    same = taken = 0
    for _ in range(20):
        q = _clustered(rng, 1, dim, spread)
        budget = int(rng.integers(1, sum(sizes)))
        most = int(rng.choice([3, 40, 10**6]))
        got = ivf.plan_probes(indexes, q, budget, 0, most)  # type: ignore[arg-type]
        want = _reference(indexes, q, budget, most)
        every = np.concatenate([i.centroids @ q[0] for i in indexes])
        cut = np.sort(every)[::-1][budget - 1]
        for index, p, lists in zip(indexes, got, want, strict=True):
            ours, theirs = set(p.lists[0].tolist()), set(lists.tolist())
            near = 2 * _bound(index.centroids, q[0])
            for no in ours ^ theirs:
                score = float(index.centroids[no] @ q[0])
                assert abs(score - cut) <= near[no] or most < 10**6, (score, cut)
            same += len(ours & theirs)
            taken += len(theirs)
    assert same / taken > 0.97 and len(int8_plans) == 20


def test_few_centroids_are_scored_in_float32(
    int8_plans: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    indexes = [_Index(_clustered(rng, 50, 32, 0.5)) for _ in range(2)]
    q = _clustered(rng, 1, 32, 0.5)
    ivf.plan_probes(indexes, q, 10, 0, 10**6)  # type: ignore[arg-type]
    assert len(int8_plans) == 1
    monkeypatch.setattr(ivf, "PLAN_INT8_FROM", 101)  # more than the 100 centroids
    ivf.plan_probes(indexes, q, 10, 0, 10**6)  # type: ignore[arg-type]
    assert len(int8_plans) == 1


def test_a_search_over_shards_finds_as_much_with_int8_centroids(
    shards: list[Shard],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Real IVF shards, the vector side of a search across them (sides.Sides): the docs found
    with the int8 plan are nearly always those of the float32 one."""
    monkeypatch.setattr(ivf, "PLAN_PER_SHARD", 12)
    monkeypatch.setattr(ivf, "PLAN_SHARE", 0.0)  # that budget, not the share floor (2514)
    calls: list[int] = []
    real = ivf_coarse.scores
    monkeypatch.setattr(ivf_coarse, "scores", lambda *a: calls.append(1) or real(*a))
    same = found = 0
    for q in _queries(shards, 24):
        monkeypatch.setattr(ivf, "PLAN_INT8_FROM", 1 << 62)
        every = {(no, d) for no, docs, *_ in _vector_side(shards, q) for d in docs}
        assert not calls
        monkeypatch.setattr(ivf, "PLAN_INT8_FROM", 0)
        ours = {(no, d) for no, docs, *_ in _vector_side(shards, q) for d in docs}
        assert calls
        calls.clear()
        same += len(every & ours)
        found += len(every)
    assert found and same / found >= 0.95


def _int8_cases(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    cases = []
    for n, dim in [(0, 384), (1, 1), (5000, 384), (17, 1536), (3, 4100)]:
        codes = rng.integers(-127, 128, (n, dim)).astype(np.int8)
        most = min(32767, (2**31 - 1) // (127 * dim))
        cases.append((codes, rng.integers(-most, most + 1, dim).astype(np.int16)))
    full = np.full((4, 4100), 127, np.int8)  # the largest sums the query's range allows
    most = (2**31 - 1) // (127 * 4100)
    cases += [(full, np.full(4100, most, np.int16)), (full, np.full(4100, -most, np.int16))]
    return cases


def test_coarse_scores_are_exact_sums_and_the_same_in_both_kernels(compiled: ModuleType) -> None:
    rng = np.random.default_rng(11)
    for codes, q16 in _int8_cases(rng):
        exact = codes.astype(np.int64) @ q16.astype(np.int64)  # no overflow, no rounding
        scale = rng.random(len(codes)) * 1e-2
        want = (exact.astype(np.float64) * scale * 3e-5).astype(np.float32)
        for module in (numpy_twins, compiled):
            got = module.coarse_scores(codes, q16, scale, 3e-5)
            assert got.dtype == np.float32
            np.testing.assert_array_equal(got, want)  # bit for bit


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
    q16 = rng.integers(-32767, 32768, 384).astype(np.int16)
    args = (codes, q16, rng.random(n), 3e-5)
    ok.append(bool(np.array_equal(nk.coarse_scores(*args), twin.coarse_scores(*args))))
    every = rng.random(n).astype(np.float32)
    starts = np.array([0, n // 3, n], np.int64)
    most = np.array([5, 50], np.int64)
    plans = [m.plan_lists(every, starts, twin.plan_cut(every, 40), 0, most) for m in (nk, twin)]
    ok += [bool(np.array_equal(a, b)) for a, b in zip(*plans)]
print(json.dumps({"ok": all(ok), **kernels.report()}))
"""
    env = {**os.environ, "MEMLAKE_KERNELS": "numba", "NUMBA_CPU_NAME": "generic",
           "PYTHONPATH": str(ROOT / "shared")}  # fmt: skip
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True,
                         check=True, timeout=300)  # fmt: skip
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["level"] == "generic" and got["ok"], got


def test_a_damaged_centroid_scores_nan_and_leaves_the_others_alone(compiled: ModuleType) -> None:
    """NaN or inf in a stored centroid: codes stay in -127..127 (no undefined cast, no int32
    overflow), its own score is NaN as float32's would be, the other centroids' are unchanged,
    in both kernels."""
    rng = np.random.default_rng(8)
    clean = _clustered(rng, 40, 384, 0.5)
    damaged = clean.copy()
    damaged[3, 7], damaged[9, :] = np.nan, np.inf
    made = ivf_coarse.quantise(damaged)
    assert np.abs(made.codes.astype(np.int16)).max() <= 127
    q16, q_scale = ivf_coarse.query16(_clustered(rng, 1, 384, 0.5)[0])
    want = numpy_twins.coarse_scores(ivf_coarse.quantise(clean).codes, q16,
                                     ivf_coarse.quantise(clean).scale, q_scale)  # fmt: skip
    for module in (numpy_twins, compiled):
        got = module.coarse_scores(made.codes, q16, made.scale, q_scale)
        assert np.isnan(got[[3, 9]]).all()
        others = np.ones(40, bool)
        others[[3, 9]] = False
        np.testing.assert_array_equal(got[others], want[others])


def test_a_cached_shard_counts_its_int8_centroids(monkeypatch: pytest.MonkeyPatch) -> None:
    """The int8 copy is memory the shard cache bounds: the shard's bytes grow by it, and its
    listener (the cache) hears of it, once."""
    monkeypatch.setattr(ivf, "PLAN_INT8_FROM", 0)
    shard = _shard(OTHER, 5)
    index = shard.ivf_index()
    assert index is not None
    before, heard = shard.nbytes, []
    shard.on_grow = lambda s: heard.append(s.nbytes)
    q = _queries([shard], 3)[:1].astype(np.float32)
    for _ in range(2):
        ivf.plan_probes([index], q, 3, 0, 10**6)
    made = index.quantised.get()
    grown = made.codes.nbytes + made.scale.nbytes
    assert shard.nbytes == before + grown and heard == [before + grown]
