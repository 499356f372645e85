"""Shards from SQ8_MIN_ROWS vector rows scan 8-bit codes and re-score exactly (decision 1202):
the episodes found and their cosines must be those of an exact scan, filters included."""

from __future__ import annotations

import numpy as np
import pytest

from memlake.search.index import ivf, shard_vectors
from memlake.search.index.shard import Doc, Shard
from memlake.search.index.shard_build import build

DIM = 384
ROWS_PER_DOC = 8
TOPICS = (lambda t: t / np.linalg.norm(t, axis=1, keepdims=True))(
    np.random.default_rng(3).normal(size=(64, DIM))
).astype(np.float32)


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _mixtures(rng: np.random.Generator, topics: np.ndarray, n: int) -> np.ndarray:
    """Vectors that spread like passage vectors: 2-3 topic directions with random weights plus
    noise (not near-copies of a few vectors, on which any index looks exact)."""
    picks = rng.integers(0, len(topics), size=(n, 3))
    weights = rng.random((n, 3)) * (rng.random((n, 3)) < 0.8)
    mixed = np.einsum("nk,nkd->nd", weights, topics[picks])
    return _unit(mixed + rng.normal(0, 0.8 / np.sqrt(DIM), (n, DIM)))


@pytest.fixture(scope="module")
def shard() -> Shard:
    """A shard scanned as decision 1202 does (format 2, or format 3 without the IVF arrays)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ivf, "IVF_MIN_ROWS", 10**9)
        return _shard()


def _shard() -> Shard:
    rng = np.random.default_rng(7)
    vectors = _mixtures(rng, TOPICS, 700 * ROWS_PER_DOC).reshape(700, ROWS_PER_DOC, DIM)
    docs = [
        Doc(f"e{i:04d}", i, i, i, None, ["word"], vectors[i], passages=[(0, 1, ["word"])] * 8)
        for i in range(700)
    ]
    loaded = Shard.from_bytes(build(docs, model="m", dim=DIM))
    assert len(loaded.vectors) >= shard_vectors.SQ8_MIN_ROWS  # the quantised path is the one tested
    assert not loaded._ivf_arrays
    return loaded


def _exact(shard: Shard, q: np.ndarray, mask: np.ndarray | None, k: int) -> tuple[list, list]:
    best = np.full(shard.n, -np.inf)
    np.maximum.at(best, shard.chunk_doc, shard.vectors @ q)
    if mask is not None:
        best[~mask] = -np.inf
    top = np.argsort(-best, kind="stable")[:k]
    return top.tolist(), best[top].tolist()


@pytest.mark.parametrize("filtered", [False, True])
def test_quantised_scan_finds_what_an_exact_scan_finds(shard: Shard, filtered: bool) -> None:
    rng = np.random.default_rng(11)
    near = shard.vectors[rng.integers(0, len(shard.vectors), 20)]  # close to a stored passage
    near = _unit(near + rng.normal(0, 1 / np.sqrt(DIM), near.shape))
    queries = np.concatenate([near, _mixtures(rng, TOPICS, 20)])  # and loosely related ones
    mask = (np.arange(shard.n) % 3 != 0) if filtered else None
    same = 0
    for q in queries:
        docs, scores, _, _ = shard.vector_top(q, mask, 10)
        want_docs, want_scores = _exact(shard, q, mask, 10)
        if mask is not None:
            assert mask[docs].all()
        # every cosine returned is the exact one, not a quantised estimate
        best = np.full(shard.n, -np.inf)
        np.maximum.at(best, shard.chunk_doc, shard.vectors @ q)
        np.testing.assert_allclose(scores, best[docs], rtol=0, atol=1e-5)
        same += len(set(docs.tolist()) & set(want_docs))
    assert same / (10 * len(queries)) >= 0.99  # recall@10 against the exact scan


def test_small_shards_stay_exact(shard: Shard, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shard_vectors, "SQ8_MIN_ROWS", 10**9)
    monkeypatch.setattr(ivf, "IVF_MIN_ROWS", 10**9)
    flat = Shard.from_bytes(build([], model="m", dim=DIM, parts=[(shard, None)]))
    q = shard.vectors[5]
    docs, scores, _, _ = flat.vector_top(q, None, 5)
    assert docs.tolist() == _exact(flat, q, None, 5)[0]
    assert type(flat._index()).__name__ == "IndexFlatIP"
