"""A maintenance merge keeps its inputs' IVF lists (shard_build.build with reuse_lists,
docs/decisions/2501): the merged shard's centroids are theirs side by side, every kept row
stays in its list, and a search over the merged shard plans the lists it planned over them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memlake.search.index import ivf, layout
from memlake.search.index.cache import ShardCache
from memlake.search.index.shard import Doc, Shard
from memlake.search.index.shard_build import build
from memlake.store.local import LocalStore
from tests.unit.test_probe_plan import DOCS, OTHER, _docs, _queries, _shard
from tests.unit.test_vector_scan_sq8 import DIM, TOPICS


@pytest.fixture(scope="module")
def inputs() -> list[Shard]:
    return [_shard(TOPICS[:32], 1), _shard(TOPICS[16:48], 2), _shard(OTHER, 3)]


def _lists_by_row(shard: Shard) -> dict[tuple[str, int], int]:
    """(episode id, its n-th vector row) -> list number."""
    got = shard.ivf_lists()
    assert got is not None
    out, seen = {}, {}
    for row, doc in enumerate(shard.chunk_doc.tolist()):
        eid = shard.id_list[doc]
        seen[eid] = seen.get(eid, -1) + 1
        out[(eid, seen[eid])] = int(got[1][row])
    return out


def _same_rows(a: np.ndarray, b: np.ndarray) -> bool:
    """The same rows, in any order."""
    return a.shape == b.shape and sorted(map(bytes, a)) == sorted(map(bytes, b))


def test_the_merged_ivf_is_the_union_of_the_inputs_lists(inputs: list[Shard]) -> None:
    # GIVEN three IVF shards, a tenth of the first one's episodes dead
    keep = np.ones(DOCS, bool)
    keep[::10] = False
    parts = [(inputs[0], keep), (inputs[1], None), (inputs[2], None)]
    # WHEN they merge as maintenance merges them
    merged = Shard.from_bytes(build([], model="m", dim=DIM, parts=parts, reuse_lists=True))
    # THEN the dead episodes are gone, and the centroids are the inputs' (in locality order:
    # memlake.search.index.ivf_order)
    assert merged.n == 3 * DOCS - DOCS // 10
    assert not set(merged.id_list) & {inputs[0].id_list[d] for d in np.flatnonzero(~keep)}
    union = merged.ivf_lists()
    assert union is not None
    own = [s.ivf_lists() for s in inputs]
    assert all(o is not None for o in own)
    assert _same_rows(union[0], np.concatenate([o[0] for o in own if o is not None]))
    # AND every kept vector row sits in the list of the centroid it was in
    after, kept = _lists_by_row(merged), set(merged.id_list)
    for shard, lists in zip(inputs, own, strict=True):
        assert lists is not None
        for key, no in _lists_by_row(shard).items():
            if key[0] in kept:
                assert np.array_equal(union[0][after[key]], lists[0][no])
    assert merged.ivf_index() is not None and merged.format == inputs[0].format
    # AND the merged codes (one quantiser, trained anew) come with a gain for every row
    gains = merged.ivf_index().gains.gain  # type: ignore[union-attr]
    assert gains is not None and len(gains) == len(merged.chunk_doc)


def test_a_search_plans_the_same_lists_over_the_merged_shard(
    inputs: list[Shard], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ivf, "WEIGHT_DOCS", DOCS)  # each input is one shard's worth
    merged = Shard.from_bytes(
        build([], model="m", dim=DIM, parts=[(s, None) for s in inputs], reuse_lists=True)
    )
    one = merged.ivf_index()
    apart = [s.ivf_index() for s in inputs]
    assert one is not None and one.weight == 3 and all(i is not None for i in apart)
    assert one.own_nprobe() == 3 * ivf.NPROBE  # alone, it probes what the three did
    base = np.cumsum([0] + [i.nlist for i in apart if i is not None])
    for q in _queries(inputs):
        q = q.reshape(1, -1).astype(np.float32)
        [together] = ivf.plan_probes([one], q, most=10**6)
        planned = ivf.plan_probes([i for i in apart if i is not None], q, most=10**6)
        were = {int(n) + int(b) for p, b in zip(planned, base, strict=False) for n in p.lists[0]}
        assert set(together.lists[0].tolist()) == were


def test_rows_of_an_input_without_ivf_go_to_the_nearest_list(inputs: list[Shard]) -> None:
    rng = np.random.default_rng(5)
    vectors = TOPICS[rng.integers(0, 32, 40)]
    one = [(0, 1, ["w"])]
    small = Shard.from_bytes(
        build(
            [
                Doc(f"x{i}", i, i, i, None, ["w"], vectors[i : i + 1], passages=one)
                for i in range(40)
            ],
            model="m",
            dim=DIM,
        )
    )
    assert small.ivf_lists() is None  # 40 rows: flat
    merged = Shard.from_bytes(
        build([], model="m", dim=DIM, parts=[(inputs[0], None), (small, None)], reuse_lists=True)
    )
    got = merged.ivf_lists()
    assert got is not None
    centroids, lists = got
    tail = np.asarray(merged.vectors[-40:])
    assert np.array_equal(lists[-40:], np.argmax(tail @ centroids.T, axis=1))


def test_a_fold_trains_its_own_lists_and_a_bigger_merge_keeps_its_inputs(tmp_path: Path) -> None:
    """Maintenance folds the write path's tier-1 shards into a partial tier-2 shard, which
    trains its IVF as the write path's own tier-2 merges do (the union of 512-episode shards'
    lists probed worse: decision 2515); merges into tier 3 and above keep the inputs' lists."""
    store = LocalStore(tmp_path)
    writer = layout.Layout(ShardCache(0), store, "t", 1, "m")
    parts = [writer.seal(_docs(TOPICS[:32], 1)), writer.seal(_docs(TOPICS[16:48], 2))]
    inputs = [Shard.from_bytes(store.get(p.key)) for p in parts]
    union = np.concatenate([s.ivf_lists()[0] for s in inputs])  # type: ignore[index]

    def centroids(tier: int) -> np.ndarray:
        merged = writer.merge(parts, tier)
        assert merged.tier == tier and merged.docs == 2 * DOCS
        shard = Shard.from_bytes(store.get(merged.key))
        got = shard.ivf_lists()
        assert got is not None
        return got[0]

    assert _same_rows(centroids(layout.MAX_TIER + 1), union)
    trained = centroids(layout.MAX_TIER)
    assert len(trained) == ivf.nlist_for(2 * DOCS * len(inputs[0].vectors) // DOCS)
    assert not np.array_equal(trained, union[: len(trained)])
