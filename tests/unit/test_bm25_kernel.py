"""BM25's posting kernel (scipy's csc_matvec, decision 1317): the same float32 sums as
np.add.at, and postings checked before it adds by them (it does not bounds-check)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from memlake.errors import CorruptObject
from memlake.search.index import cache
from memlake.search.index.shard import Doc, Shard
from memlake.search.index.shard_bm25 import _accumulate
from memlake.search.index.shard_build import build
from memlake.store.local import LocalStore

KEY = "tenants/t/search/shard.npz"


def _reference(n: int, postings: list, idf: list[float]) -> np.ndarray:
    scores = np.zeros(n, np.float32)
    for got, w in zip(postings, idf, strict=True):
        if got is not None:
            np.add.at(scores, got[0], np.float32(w) * got[1])
    return scores


def test_the_kernel_adds_exactly_what_ufunc_at_adds() -> None:
    rng = np.random.default_rng(7)
    n = 5000
    postings = []
    for size in (3000, 0, 1, 4999, 700):  # docs repeat across terms; one term has none
        docs = np.sort(rng.choice(n, size, replace=False)).astype(np.int32)
        postings.append((docs, rng.random(size).astype(np.float32)))
    postings.insert(2, None)  # a term the shard has not seen
    idf = rng.random(len(postings)).tolist()
    got = _accumulate(n, postings, idf)
    assert got.dtype == np.float32
    assert np.array_equal(got, _reference(n, postings, idf))
    assert not _accumulate(n, [None], [1.0]).any()


def _shard_bytes() -> bytes:
    rng = np.random.default_rng(3)
    docs = [
        Doc(f"e{i}", i, i, i + 1, None, ["alpha", f"w{i}"],
            rng.standard_normal((2, 8)).astype(np.float32), passages=[(0, 4, ["alpha"])] * 2)
        for i in range(12)
    ]  # fmt: skip
    return build(docs, model="m", dim=8)


def _damaged(name: str, how: str) -> bytes:
    with np.load(io.BytesIO(_shard_bytes()), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arr = arrays[name].copy()
    if how == "out of order":
        arr[[0, -1]] = arr[[-1, 0]]
    elif how == "past the end":
        arr[-1] = len(arrays["p_doc"] if name.startswith("p_") else arrays["seq"])
    elif how == "negative":
        arr[0] = -1  # numpy indexing would wrap it to the last doc
    else:
        arr = arr.astype(np.int64)
    buf = io.BytesIO()
    np.savez(buf, **{**arrays, name: arr})
    return buf.getvalue()


DAMAGES = [
    (name, how)
    for name in ("indices", "p_indices", "p_doc")
    for how in ("past the end", "negative", "int64")
] + [("p_doc", "out of order")]


@pytest.mark.parametrize(("name", "how"), DAMAGES)
def test_postings_that_name_no_doc_are_a_clear_error(tmp_path: Path, name: str, how: str) -> None:
    """Postings, and each passage's doc (the pruned BM25 indexes by it unchecked), that name no
    doc, or passages out of doc order: the shard's load fails naming the array."""
    data = _damaged(name, how)
    with pytest.raises(ValueError, match=f"{name}: "):
        Shard.from_bytes(data)
    store = LocalStore(tmp_path)
    store.put(KEY, data)
    with pytest.raises(CorruptObject, match=name):
        cache.ShardCache(max_bytes=1 << 30).load_many(store, [KEY])


def test_an_undamaged_shard_searches_as_before() -> None:
    shard = Shard.from_bytes(_shard_bytes())
    ids = shard.term_ids(["alpha", "w3"])
    episode = shard.bm25(ids, [0.5, 2.0])
    assert int(np.argmax(episode)) == 3 and (episode > 0).all()
