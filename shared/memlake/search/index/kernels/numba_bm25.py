"""BM25's compiled kernels (numba): twins of numpy_twins.bm25_top and best_passages, under the
rules of memlake.search.index.kernels.numba_kernels (same results, nogil, cached; postings are
checked when a shard is read, these loops do not bounds-check). Their own file: numba caches a
function by the file that defines it.

A shard's BM25 for one query is summed over every posting of every term (`_dense`) unless the
query's light terms cannot change which docs are its k best (`_pruned`, decision 2505): common
words carry most postings (a word in every passage: ~1M postings at 100k episodes) and almost
no weight (idf ~0). The pruned path sums the heavy terms whole, heaviest first, until the
weights left (each posting's saturated tf is at most 1, so a doc gains at most the sum of the
remaining idfs, whole or in any passage) cannot lift a doc the heavy terms did not reach, nor
one they did, to the k-th best lower bound; then only the docs that could still make the k best
are scored exactly, every term in query order by galloping lookups in its postings (the same
float32 operations in the same order as `_dense`, so the same scores). A search's `floor` (the
k-th best score of the shards it has searched, decision 2509) raises that bound: a doc below it
cannot make the search's k best, so the docs left to score are fewer and found sooner. `p_doc`
is checked when a shard is read (ascending doc numbers in 0..n-1), as the postings are. Its
bounds are widened by SLACK (float32 sums in another order differ in their last bits); it
gives up for the dense path once it has summed GIVE_UP of the postings, or when its lookups
would cost more than what is left.
"""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(nogil=True, cache=True)

#: the pruned path's bounds are widened by this share of the k-th best lower bound
SLACK = 1e-4
#: the pruned path gives up for the dense one once its heavy terms hold this share of postings
GIVE_UP = 1 / 3
#: one exact lookup of a candidate doc in one term's postings costs about as much as this many
#: postings summed by the dense path
LOOKUP_COST = 32


@_jit
def _accumulate(size, docs, sat, lo, hi, w):  # type: ignore[no-untyped-def]
    scores = np.zeros(size, np.float32)
    for t in range(w.shape[0]):
        wt = w[t]
        # unsigned indices: numba checks a signed one for wrapping around (2x slower here)
        for i in range(np.uint64(lo[t]), np.uint64(hi[t])):
            scores[np.uint32(docs[i])] += sat[i] * wt
    return scores


@_jit
def _worse(a, at, b, bt):  # type: ignore[no-untyped-def]
    """Is score `a` at position `at` below `b` at `bt` in the top order (best score first,
    equal scores by position)?"""
    return a < b or (a == b and at > bt)


@_jit
def _top_k(scores, k):  # type: ignore[no-untyped-def]
    # the twin's set and order (the k best positive scores, equal ones by position) from one
    # pass keeping a heap of the k best, its root the worst of them: a new score displaces it
    # only when higher, as a later equal one comes after it. np.partition over every positive
    # score cost ~0.3 ms for a 32k-doc shard, most of its BM25 top list once postings are summed
    kept = np.empty(max(k, 0), np.float32)
    at = np.empty(max(k, 0), np.int64)
    m = 0
    for d in range(scores.shape[0]):
        v = scores[d]
        if v <= 0:
            continue
        if m < k:  # not full: sift up from the end
            i = m
            m += 1
            while i > 0:
                up = (i - 1) >> 1
                if not _worse(v, d, kept[up], at[up]):
                    break
                kept[i], at[i] = kept[up], at[up]
                i = up
            kept[i], at[i] = v, d
        elif k > 0 and v > kept[0]:  # better than the worst kept: it goes, sift down
            i = 0
            while True:
                c = 2 * i + 1
                if c >= m:
                    break
                if c + 1 < m and _worse(kept[c + 1], at[c + 1], kept[c], at[c]):
                    c += 1
                if not _worse(kept[c], at[c], v, d):
                    break
                kept[i], at[i] = kept[c], at[c]
                i = c
            kept[i], at[i] = v, d
    pos = np.sort(at[:m])
    neg = np.empty(m, np.float32)
    for i in range(m):
        neg[i] = -scores[pos[i]]
    return pos[np.argsort(neg, kind="mergesort")]


@_jit
def _share(s, total, t32):  # type: ignore[no-untyped-def]
    if total <= 0:
        return np.float32(0)
    v = s / t32
    if v < 0:
        return np.float32(0)
    if v > 1:
        return np.float32(1)
    return v


@_jit
def _dense(  # type: ignore[no-untyped-def]
    n, e_docs, e_sat, e_lo, e_hi, p_docs, p_sat, p_lo, p_hi, w, p_first, agg, mix, decay,
    total, mask, masked, k,
):  # fmt: skip
    episode = _accumulate(n, e_docs, e_sat, e_lo, e_hi, w)
    second = np.zeros(n, np.float32)
    if p_first.shape[0] > 0:
        passages = _accumulate(p_first[n], p_docs, p_sat, p_lo, p_hi, w)
        best = np.empty(n, np.float32)
        for d in range(n):  # the run's max, as np.maximum.reduceat gives it
            lo, hi = np.uint64(p_first[d]), np.uint64(p_first[d + 1])
            b1 = passages[lo] if lo < passages.shape[0] else np.float32(0)
            for j in range(lo + 1, hi):
                b1 = max(b1, passages[j])  # a select, not a branch: ~half mispredicted
            best[d] = b1
        if agg == 2:  # the second best positive passage (its own loop: 7x slower with the max)
            for d in range(n):
                top1, b2 = np.float32(0), np.float32(0)
                for j in range(np.uint64(p_first[d]), np.uint64(p_first[d + 1])):
                    v = passages[j]
                    if v > top1:
                        b2, top1 = top1, v
                    elif v > b2:
                        b2 = v
                second[d] = b2
    else:
        passages = np.zeros(0, np.float32)
        best = episode
    t32 = np.float32(total)
    a32, b32, dec32 = np.float32(mix), np.float32(1 - mix), np.float32(decay)
    score = np.empty(n, np.float32)
    for d in range(n):
        if agg == 0:
            s = episode[d]
        elif agg == 1:
            s = best[d]
        elif agg == 2:
            s = best[d] + dec32 * second[d]
        else:
            s = a32 * episode[d] + b32 * best[d]
        v = _share(s, total, t32)
        if masked and not mask[d]:
            v = np.float32(0)
        score[d] = v
    top = _top_k(score, k)
    m = top.shape[0]
    top_score = np.empty(m, np.float32)
    top_best = np.empty(m, np.float32)
    for i in range(m):
        top_score[i] = score[top[i]]
        top_best[i] = _share(best[top[i]], total, t32)
    return top, top_score, top_best, passages


@_jit
def best_passages(p_first, docs, scores):  # type: ignore[no-untyped-def]
    out = np.full(docs.shape[0], -1, np.int64)
    if scores.shape[0] == 0:
        return out
    for i in range(docs.shape[0]):
        lo, hi = p_first[docs[i]], p_first[docs[i] + 1]
        at, b = lo, scores[lo]
        for j in range(lo + 1, hi):
            if scores[j] > b:
                at, b = j, scores[j]
        if b > 0:
            out[i] = at
    return out


@_jit
def bm25_top(  # type: ignore[no-untyped-def]
    n, e_docs, e_sat, e_lo, e_hi, p_docs, p_sat, p_lo, p_hi, w, p_first, p_doc, agg, mix,
    decay, total, mask, masked, k, floor, scratch,
):  # fmt: skip
    """numpy_twins.bm25_top. The pruned path leaves out docs scoring below `floor` (so it may
    give fewer than k) and sums passages in `scratch` (zeros, at least a passage long, else
    it allocates its own), which it leaves as zeros."""
    if agg != 2 and k > 0 and n > 0 and p_first.shape[0] > 0 and p_doc.shape[0] == p_first[n]:
        got = _pruned(
            n, e_docs, e_sat, e_lo, e_hi, p_docs, p_sat, p_lo, p_hi, w, p_first, p_doc, agg,
            mix, total, mask, masked, k, floor, scratch,
        )  # fmt: skip
        if got[0]:
            return got[1], got[2], got[3], got[4]
    top, top_score, top_best, passages = _dense(
        n, e_docs, e_sat, e_lo, e_hi, p_docs, p_sat, p_lo, p_hi, w, p_first, agg, mix, decay,
        total, mask, masked, k,
    )  # fmt: skip
    return top, top_score, top_best, best_passages(p_first, top, passages)


@_jit
def _lower(arr, lo, hi, x):  # type: ignore[no-untyped-def]
    """The first position in arr[lo:hi] (ascending) holding x or more (hi: none), galloping
    from lo: the candidates ascend, so each search starts where the last one ended and the
    steps stay near it (a binary search over a common word's ~1M postings missed the cache
    at most of its ~20 steps)."""
    step = 1
    while lo + step < hi and arr[lo + step] < x:
        lo += step
        step *= 2
    if lo < hi and arr[lo] >= x:
        return lo
    hi = min(hi, lo + step + 1)
    while lo < hi:
        mid = (lo + hi) >> 1
        if arr[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def _bound(agg, a32, b32, episode, best):  # type: ignore[no-untyped-def]
    if agg == 0:
        return episode
    if agg == 1:
        return best
    return a32 * episode + b32 * best


@_jit
def _pruned(  # type: ignore[no-untyped-def]
    n, e_docs, e_sat, e_lo, e_hi, p_docs, p_sat, p_lo, p_hi, w, p_first, p_doc, agg, mix,
    total, mask, masked, k, floor, scratch,
):  # fmt: skip
    terms = w.shape[0]
    need_floor = np.float64(floor) * np.float64(total)  # the floor in raw BM25
    nothing = (
        False, np.empty(0, np.int64), np.empty(0, np.float32), np.empty(0, np.float32),
        np.empty(0, np.int64),
    )  # fmt: skip
    cost = np.empty(terms, np.int64)
    whole = 0
    for t in range(terms):
        if not w[t] >= 0:  # a negative (or NaN) weight: the bounds do not hold
            return nothing
        cost[t] = (e_hi[t] - e_lo[t]) + (p_hi[t] - p_lo[t])
        whole += cost[t]
    order = np.argsort(-w, kind="mergesort")  # heaviest first
    left = np.zeros(terms + 1, np.float64)  # left[i]: the weights of order[i:]
    for i in range(terms - 1, -1, -1):
        left[i] = left[i + 1] + w[order[i]]
    a32, b32 = np.float32(mix), np.float32(1 - mix)
    episode = np.zeros(n, np.float32)
    # zeroing a 32k-doc shard's 655k passages cost ~0.1 ms, a tenth of its BM25 (decision 2509)
    size = p_first[n]
    passages = scratch[:size] if scratch.shape[0] >= size else np.zeros(size, np.float32)
    best = np.zeros(n, np.float32)  # each doc's best passage so far
    seen = np.zeros(n, np.bool_)
    touched = np.empty(n, np.int64)
    bounds = np.empty(n, np.float32)
    count = 0
    summed = 0
    for i in range(terms - 1):  # after the last term nothing is left to prune
        t = order[i]
        if summed + cost[t] > GIVE_UP * whole:
            _clear(passages, p_docs, p_lo, p_hi, order, i)
            return nothing
        wt = w[t]
        for j in range(np.uint64(e_lo[t]), np.uint64(e_hi[t])):
            d = e_docs[j]
            episode[d] += e_sat[j] * wt
            if not seen[d]:
                seen[d] = True
                touched[count] = d
                count += 1
        for j in range(np.uint64(p_lo[t]), np.uint64(p_hi[t])):
            p = p_docs[j]
            passages[p] += p_sat[j] * wt
            d = p_doc[p]
            best[d] = max(best[d], passages[p])
            if not seen[d]:
                seen[d] = True
                touched[count] = d
                count += 1
        summed += cost[t]
        m = 0  # the lower bounds of the docs reached that the filter allows
        for c in range(count):
            d = touched[c]
            if not masked or mask[d]:
                v = _bound(agg, a32, b32, episode[d], best[d])
                if v > 0:
                    bounds[m] = v
                    m += 1
        need = need_floor  # a doc must reach the floor, and the k-th best lower bound
        if m >= k:
            need = max(need, np.float64(_kth_best(bounds, m, k)))
        cut = need * (1 - SLACK) - left[i + 1]
        if cut <= 0:  # a doc not reached yet could still make the k best
            continue
        picked = np.empty(m, np.int64)
        got = 0
        for c in range(count):
            d = touched[c]
            if (not masked or mask[d]) and _bound(agg, a32, b32, episode[d], best[d]) >= cut:
                picked[got] = d
                got += 1
        if got * terms * LOOKUP_COST > whole - summed:
            continue  # looking them up would cost more than summing what is left
        docs = np.sort(picked[:got])
        top, top_score, top_best = _exact(
            docs, e_docs, e_sat, e_lo, e_hi, p_docs, p_sat, p_lo, p_hi, w, p_first, agg, a32,
            b32, total, passages, k,
        )  # fmt: skip
        top_passage = best_passages(p_first, top, passages)
        _clear(passages, p_docs, p_lo, p_hi, order, i + 1)
        for d in docs:  # _exact wrote their passages
            passages[p_first[d] : p_first[d + 1]] = 0
        return True, top, top_score, top_best, top_passage
    _clear(passages, p_docs, p_lo, p_hi, order, terms - 1)
    return nothing


@_jit
def _kth_best(values, m, k):  # type: ignore[no-untyped-def]
    """The k-th best of values[:m] (1 <= k <= m), np.partition's, from a heap of the k best:
    numba's np.partition took ~0.4 ms over 30,000 bounds, this ~0.03 (decision 2509)."""
    heap = np.empty(k, np.float32)  # its root the worst of the k best so far
    for i in range(k):
        heap[i] = values[i]
    for i in range(k // 2 - 1, -1, -1):
        _sift_down(heap, i, k)
    for i in range(k, m):
        if values[i] > heap[0]:
            heap[0] = values[i]
            _sift_down(heap, 0, k)
    return heap[0]


@_jit
def _sift_down(heap, i, k):  # type: ignore[no-untyped-def]
    v = heap[i]
    while True:
        c = 2 * i + 1
        if c >= k:
            break
        if c + 1 < k and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] >= v:
            break
        heap[i] = heap[c]
        i = c
    heap[i] = v


@_jit
def _clear(passages, p_docs, p_lo, p_hi, order, upto):  # type: ignore[no-untyped-def]
    """Zero the passages of the postings of terms order[:upto] (the heavy ones summed)."""
    for i in range(upto):
        t = order[i]
        for j in range(np.uint64(p_lo[t]), np.uint64(p_hi[t])):
            passages[p_docs[j]] = 0


@_jit
def _exact(  # type: ignore[no-untyped-def]
    docs, e_docs, e_sat, e_lo, e_hi, p_docs, p_sat, p_lo, p_hi, w, p_first, agg, a32, b32,
    total, passages, k,
):  # fmt: skip
    """The k best of `docs` (ascending) by their exact scores, as _dense computes them; their
    passages' exact scores are written into `passages`."""
    terms, m = w.shape[0], docs.shape[0]
    e_at, p_at = e_lo.copy(), p_lo.copy()  # each term's cursor: the docs ascend
    score = np.empty(m, np.float32)
    best = np.empty(m, np.float32)
    t32 = np.float32(total)
    for c in range(m):
        d = docs[c]
        s = np.float32(0)
        for t in range(terms):
            j = _lower(e_docs, e_at[t], e_hi[t], d)
            e_at[t] = j
            if j < e_hi[t] and e_docs[j] == d:
                s += e_sat[j] * w[t]
        lo, hi = p_first[d], p_first[d + 1]
        for p in range(lo, hi):
            passages[p] = 0
        for t in range(terms):
            j = _lower(p_docs, p_at[t], p_hi[t], lo)
            while j < p_hi[t] and p_docs[j] < hi:
                passages[p_docs[j]] += p_sat[j] * w[t]
                j += 1
            p_at[t] = j
        b1 = passages[lo] if lo < passages.shape[0] else np.float32(0)
        for j in range(lo + 1, hi):
            b1 = max(b1, passages[j])
        best[c] = b1
        score[c] = _share(_bound(agg, a32, b32, s, b1), total, t32)
    at = _top_k(score, k)
    top_score = np.empty(at.shape[0], np.float32)
    top_best = np.empty(at.shape[0], np.float32)
    for i in range(at.shape[0]):
        top_score[i] = score[at[i]]
        top_best[i] = _share(best[at[i]], total, t32)
    return docs[at], top_score, top_best
