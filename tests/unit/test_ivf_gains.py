"""Each PQ-coded row's gain (memlake.search.index.ivf_codes.gains, decision 2508): code scores
times it rank the rows nearer their exact order, a shard written before gains (or with some
damaged) still searches, and a gain array of the wrong shape is a corrupt object."""

from __future__ import annotations

import numpy as np
import pytest

from memlake.errors import CorruptObject
from memlake.search.index import ivf, ivf_codes


def _rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    """Unit rows that mix two of a few hundred topics, with a spectrum that falls with the
    dimension, as sentence embeddings' does (on isotropic noise PQ shrinks every row alike
    and gains change little; on the dev corpora's MiniLM passages they halve the tail)."""
    scale = 1.0 / np.sqrt(1 + np.arange(dim) / 8)
    hubs = rng.standard_normal((300, dim)) * scale
    a, b = hubs[rng.integers(0, 300, n)], hubs[rng.integers(0, 300, n)]
    w = rng.uniform(0, 1, (n, 1))
    x = w * a + (1 - w) * b + 0.3 * rng.standard_normal((n, dim)) * scale
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module", params=[5, 6])
def built(request: pytest.FixtureRequest) -> tuple[np.ndarray, dict, np.ndarray]:
    rng = np.random.default_rng(request.param)
    x = _rows(rng, 12_000, 384)
    arrays = ivf.train(x)
    queries = _rows(rng, 100, 384)
    return x, arrays, queries


def _ranks(index: ivf.Ivf, x: np.ndarray, queries: np.ndarray, gained: bool) -> np.ndarray:
    """The code rank (all lists probed) of each query's 10 exactly nearest rows."""
    if not gained:
        index.gains = ivf_codes.Gains(None)
    out = []
    for q in queries:
        q1 = q.reshape(1, -1)
        rows, codes, how = index.candidates(q1, len(x), len(x), None, None, None)
        assert how == "codes" and len(rows) == len(x)
        scores = index.gains.times(rows, codes)
        order = rows[np.argsort(-scores, kind="stable")]
        rank = np.empty(len(x), np.int64)
        rank[order] = np.arange(len(x))
        out.extend(rank[np.argsort(-(x @ q))[:10]].tolist())
    return np.asarray(out)


def test_gains_rank_the_nearest_rows_higher(built: tuple[np.ndarray, dict, np.ndarray]) -> None:
    """The 10 nearest rows' ranks among every code score: lower with gains, and the tail
    (what a cutoff across shards loses) too. Every gain is about 1 / (the share of a row PQ
    keeps)."""
    x, arrays, queries = built
    gain = arrays["ivf_gain"]
    assert gain.dtype == np.float16 and gain.shape == (len(x),)
    assert 1.05 < float(np.median(gain.astype(np.float32))) < 2.0
    plain = _ranks(ivf.Ivf(arrays, x.shape[1]), x, queries, gained=False)
    gained = _ranks(ivf.Ivf(arrays, x.shape[1]), x, queries, gained=True)
    assert gained.mean() < 0.96 * plain.mean()  # 0.925-0.945 over seeds 5-10
    assert np.percentile(gained, 98) < np.percentile(plain, 98)


def test_a_shard_without_gains_scores_by_its_codes(
    built: tuple[np.ndarray, dict, np.ndarray],
) -> None:
    """A shard written before gains (no ivf_gain): code scores as FAISS gives them."""
    x, arrays, queries = built
    old = {k: v for k, v in arrays.items() if k != "ivf_gain"}
    index = ivf.Ivf(old, x.shape[1])
    assert index.gains.gain is None
    rows, codes, _ = index.candidates(queries[:1], 200, len(x), None, None, None)
    assert np.all(np.diff(codes) <= 0)
    assert index.gains.times(rows, codes) is codes


def test_damaged_gains(built: tuple[np.ndarray, dict, np.ndarray]) -> None:
    """A gain array of the wrong length or type is a corrupt object (rebuild it); a NaN, inf
    or out-of-range gain counts as 1, so one bad value cannot hide a row or flood a cutoff."""
    x, arrays, queries = built
    for wrong in (arrays["ivf_gain"][:-1], arrays["ivf_gain"].astype(np.float32)):
        with pytest.raises(CorruptObject, match="ivf_gain"):
            ivf.Ivf({**arrays, "ivf_gain": wrong}, x.shape[1])
    damaged = arrays["ivf_gain"].copy()
    damaged[:3] = [np.nan, np.inf, 100.0]
    index = ivf.Ivf({**arrays, "ivf_gain": damaged}, x.shape[1])
    assert index.gains.gain is not None
    assert index.gains.gain[:3].tolist() == [1.0, 1.0, 1.0]
    assert float(np.max(index.gains.gain)) <= ivf_codes.GAIN_RANGE[1]
    rows, codes, _ = index.candidates(queries[:1], 500, len(x), None, None, None)
    assert np.all(np.isfinite(index.gains.times(rows, codes)))


def test_lists_naming_rows_past_the_gains_are_a_corrupt_object(
    built: tuple[np.ndarray, dict, np.ndarray],
) -> None:
    """A candidate row past the gains (lists and gains of a damaged object disagree) is a
    corrupt object, not an IndexError from deep in a search."""
    x, arrays, _ = built
    gains = ivf_codes.Gains(arrays["ivf_gain"][:100], "tenants/t/search/s1.npz")
    with pytest.raises(CorruptObject, match="s1.npz: ivf_gain"):
        gains.times(np.array([5, 100]), np.ones(2, np.float32))
    assert gains.times(np.array([5, 99]), np.ones(2, np.float32)).shape == (2,)
