"""An IVF shard stores its lists in locality order (memlake.search.index.ivf_order, decision
4401): near centroids get near list numbers, so a query's probed lists and its re-score
candidates lie in few runs of the shard (few ranged GETs on S3), and nothing else changes."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from memlake.search.index import ivf, ivf_order
from memlake.search.index.shard import Shard
from memlake.search.index.shard_build import build
from tests.unit.test_vector_ivf import DOCS, _arrays, _check_lists, _docs
from tests.unit.test_vector_scan_sq8 import DIM, TOPICS, _mixtures, _unit


def _runs(places: np.ndarray, gap: int) -> int:
    """How many reads cover `places` when places at most `gap` apart are read together."""
    at = np.unique(places)
    return int(1 + (np.diff(at) > gap).sum()) if len(at) else 0


def test_the_order_is_a_deterministic_permutation() -> None:
    rng = np.random.default_rng(1)
    for n in (0, 1, 2, 3, 9, 200):
        c = _mixtures(rng, TOPICS, n)
        perm = ivf_order.locality_order(c)
        assert sorted(perm.tolist()) == list(range(n))
        assert (ivf_order.locality_order(c) == perm).all()


def test_a_damaged_centroid_still_gets_a_place() -> None:
    c = _mixtures(np.random.default_rng(2), TOPICS, 40)
    c[5] = np.nan
    assert sorted(ivf_order.locality_order(c).tolist()) == list(range(40))


def test_renumbering_keeps_every_row_with_its_centroid() -> None:
    rng = np.random.default_rng(3)
    centroids, lists = _mixtures(rng, TOPICS, 50), rng.integers(0, 50, 1000)
    again, renumbered = ivf_order.renumber(centroids, lists)
    np.testing.assert_array_equal(again[renumbered], centroids[lists])


def test_a_querys_nearest_centroids_get_numbers_that_lie_together() -> None:
    rng = np.random.default_rng(4)
    centroids = _mixtures(rng, TOPICS, 1024)  # k-means numbers them in no order of space
    ordered = centroids[ivf_order.locality_order(centroids)]
    queries = _mixtures(rng, TOPICS, 50)
    runs = {"as trained": 0, "ordered": 0}
    for q in queries:
        for name, c in (("as trained", centroids), ("ordered", ordered)):
            runs[name] += _runs(np.argsort(-(c @ q))[:64], gap=2)
    assert runs["ordered"] < 0.75 * runs["as trained"], runs


@pytest.fixture(scope="module", params=["pq4", "sq8"])
def two_shards(request: pytest.FixtureRequest) -> Iterator[dict[bool, tuple[Shard, np.ndarray]]]:
    """The same docs written with and without the order: the codes do not depend on it (PQ's
    training sample is taken by row), so both must answer alike."""
    docs, was = _docs(DOCS, 7), (ivf.CODES, ivf.ORDER_LISTS)
    shards = {}
    try:
        ivf.CODES = request.param
        for ordered in (False, True):
            ivf.ORDER_LISTS = ordered
            data = build(docs, model="m", dim=DIM)
            arrays = _arrays(data)
            _check_lists(arrays)  # every row once, in the list of its nearest centroid
            shards[ordered] = (Shard.from_bytes(data), arrays["ivf_rows"])
    finally:
        ivf.CODES, ivf.ORDER_LISTS = was
    yield shards


def test_a_shard_in_locality_order_finds_what_one_in_trained_order_finds(
    two_shards: dict[bool, tuple[Shard, np.ndarray]],
) -> None:
    rng = np.random.default_rng(11)
    queries = _unit(_mixtures(rng, TOPICS, 20))
    runs = {False: 0, True: 0}
    for q in queries[:, None, :]:
        found = {}
        for ordered, (shard, list_rows) in two_shards.items():
            index = shard.ivf_index()
            assert index is not None
            probes = ivf.plan_probes([index], q)[0]
            rows, scores, _ = index.candidates(q, 64, shard.n, None, None, probes)
            found[ordered] = (sorted(rows.tolist()), np.sort(scores))
            place = np.empty(len(list_rows), np.int64)  # each row's place in list order
            place[list_rows] = np.arange(len(list_rows))
            runs[ordered] += _runs(place[rows], gap=2 * ivf.ROWS_PER_LIST)
        assert found[True][0] == found[False][0]  # the same candidates
        np.testing.assert_allclose(found[True][1], found[False][1], rtol=1e-5)
    # and its candidates' rows, read in list order, in fewer ranges (102 -> 93 here, where a
    # plan probes 56 of 75 lists; 116 -> 76 requests a cold search at 10k x 20 real chat)
    assert runs[True] < 0.95 * runs[False], runs
