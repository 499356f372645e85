"""Ivf.search reuses one FAISS SearchParametersIVF a thread (making one cost ~90 us after a
pass over memory): each search sets its own list count and row filter, so a filtered search
leaves nothing behind for the next one on that thread, and threads do not share one."""

from __future__ import annotations

import threading

import numpy as np

from memlake.search.index import ivf, vector_scan


def _index() -> tuple[ivf.Ivf, np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5000, 64)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return ivf.Ivf(ivf.train(x), 64), x


def test_a_filtered_search_leaves_no_filter_for_the_next() -> None:
    index, x = _index()
    q = x[:1]
    allowed = np.zeros(len(x), bool)
    allowed[::2] = True
    params, keep = vector_scan.row_filter(allowed)
    _, filtered = index.search(q, 200, index.nlist, sel=params.sel)
    del keep
    _, every = index.search(q, 200, index.nlist)
    got = filtered[0][filtered[0] >= 0]
    assert len(got) == 200 and allowed[got].all()
    assert not allowed[every[0]].all()  # odd rows again
    assert every[0][0] == 0  # the query's own row, which the filter allowed too


def test_threads_search_with_their_own_parameters() -> None:
    index, x = _index()
    allowed = np.zeros(len(x), bool)
    allowed[:100] = True
    params, keep = vector_scan.row_filter(allowed)
    wrong: list[str] = []

    def run(filtered: bool) -> None:
        for i in range(30):
            _, rows = index.search(x[i : i + 1], 50, 8, sel=params.sel if filtered else None)
            found = rows[0][rows[0] >= 0]
            if filtered and not (found < 100).all():
                wrong.append("a filtered search found a row outside its filter")
            if not filtered and (found < 100).all():
                wrong.append("an unfiltered search was filtered")

    threads = [threading.Thread(target=run, args=(f,)) for f in (True, False, True, False)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    del keep
    assert not wrong
