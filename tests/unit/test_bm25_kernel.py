"""BM25's posting kernel (scipy's csc_matvec, decision 1317): the same float32 sums as
np.add.at (its fallback), loaded without scipy.sparse's package init (decision 2513), and
postings checked before it adds by them (it does not bounds-check)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memlake.errors import CorruptObject
from memlake.search.index import cache
from memlake.search.index.kernels import numpy_twins
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


def _postings() -> tuple[int, list, list[float]]:
    rng = np.random.default_rng(7)
    n = 5000
    postings = []
    for size in (3000, 0, 1, 4999, 700):  # docs repeat across terms; one term has none
        docs = np.sort(rng.choice(n, size, replace=False)).astype(np.int32)
        postings.append((docs, rng.random(size).astype(np.float32)))
    postings.insert(2, None)  # a term the shard has not seen
    return n, postings, rng.random(len(postings)).tolist()


@pytest.mark.parametrize("kernel", ["scipy", "np.add.at"])
def test_the_kernel_adds_exactly_what_ufunc_at_adds(
    kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """scipy's kernel, and np.add.at where it is not found: the same sums."""
    if kernel == "np.add.at":
        monkeypatch.setattr(numpy_twins, "_csc_matvec", lambda: None)
    else:
        assert numpy_twins._csc_matvec() is not None
    n, postings, idf = _postings()
    got = _accumulate(n, postings, idf)
    assert got.dtype == np.float32
    assert np.array_equal(got, _reference(n, postings, idf))
    assert not _accumulate(n, [None], [1.0]).any()


def _child(code: str) -> str:
    """`code` run by a new interpreter: its output (it must exit 0)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_kernel_is_scipys_own_when_scipy_sparse_is_imported() -> None:
    """A process that imported scipy.sparse (bm25s, indexing a write) uses its module, not
    a second load of the extension."""
    code = (
        "import importlib.machinery, scipy.sparse._sparsetools as s\n"
        "def refuse(*a): raise RuntimeError('the extension was loaded again')\n"
        "importlib.machinery.ExtensionFileLoader = refuse\n"
        "from memlake.search.index.kernels import numpy_twins as t\n"
        "assert t._csc_matvec() is s.csc_matvec\n"
    )
    _child(code)


def test_a_new_process_adds_postings_without_importing_scipy_sparse() -> None:
    """The first search of a cold Lambda runs these numpy kernels: scipy.sparse's import
    (0.4-0.7 s, numpy.f2py with it) was a third of its time."""
    code = (
        "import sys, numpy as np\n"
        "from memlake.search.index.kernels import numpy_twins as t\n"
        "docs = np.array([0, 2, 2], np.int32); sat = np.ones(3, np.float32)\n"
        "lo, hi = np.array([0, 1]), np.array([1, 3]); w = np.array([1, 2], np.float32)\n"
        "got = t.accumulate(3, docs, sat, lo, hi, w)\n"
        "assert got.tolist() == [1, 0, 4], got\n"
        "assert t._csc_matvec() is not None\n"
        "print(sorted(m for m in ('scipy', 'scipy.sparse', 'numpy.f2py') if m in sys.modules))\n"
    )
    printed = _child(code)
    assert printed == "[]", printed


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
