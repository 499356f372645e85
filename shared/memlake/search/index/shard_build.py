"""Writing a shard (memlake.search.index.shard): merge loaded shards and new docs into one object.

Nothing is re-embedded: old docs keep their stored term frequencies, passages and vectors. A
format-1 part (no passages) is first turned back into docs (`docs_of`): its vectors are kept,
its terms and passages re-tokenised from the episode rows when the caller can read them, or
else its whole episode becomes one passage (still searchable, without offsets).
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from memlake.search.index import ivf, term_postings
from memlake.search.index.arrays import I64
from memlake.search.index.shard import FORMAT, K1, NO_CONTEXT, B, Doc, Shard, _blob
from memlake.search.index.shard_source import EAGER, LIST_VECTORS
from memlake.search.index.text import episode_terms, passage_terms

#: episode id -> (episode row, passage starts, passage ends, vectors embedded) for re-tokenising
Rows = Mapping[str, tuple[dict[str, Any], Sequence[int], Sequence[int], int]]


def docs_of(shard: Shard, keep: Any, rows: Rows | None = None) -> list[Doc]:
    """The docs of a (format-1) shard among `keep`, rebuilt from `rows` where given."""
    keep = np.ones(shard.n, bool) if keep is None else np.asarray(keep, bool)
    counts = np.diff(shard.indptr)
    term_of = np.repeat(np.arange(len(shard.vocab)), counts)
    by_doc: dict[int, list[str]] = {}
    for t, d, f in zip(term_of.tolist(), shard.indices.tolist(), shard.tf.tolist(), strict=True):
        if keep[d]:
            by_doc.setdefault(d, []).extend([shard.vocab[t]] * int(f))
    ctx = [*shard.contexts, None]
    out = []
    for d in np.flatnonzero(keep).tolist():
        eid = shard.id_list[d]
        vectors = shard.vectors[shard.chunk_doc == d]
        stored = by_doc.get(d, [])
        have = (rows or {}).get(eid)
        if have is not None and len(have[1]) >= have[3]:
            row, starts, ends, embedded = have
            terms: Sequence[str] = episode_terms(row)
            passages: list[tuple[int, int, Sequence[str]]] = list(passage_terms(row, starts, ends))
            vp = list(range(len(vectors))) if embedded == len(vectors) else [-1] * len(vectors)
        else:
            terms, passages, vp = stored, [(-1, -1, stored)], [-1] * len(vectors)
        out.append(
            Doc(
                id=eid,
                seq=int(shard.seq[d]),
                t_start=int(shard.t_start[d]),
                t_end=int(shard.t_end[d]),
                context=ctx[int(shard.ctx[d])],
                terms=terms,
                vectors=vectors,
                passages=passages,
                vector_passages=vp,
            )
        )
    return out


class _Postings:
    """Postings of one kind (episodes or passages) gathered from parts and docs."""

    def __init__(self) -> None:
        self.vocabs: list[list[str]] = []
        self.terms: list[I64] = []
        self.docs: list[I64] = []
        self.tf: list[Any] = []

    def add_csc(self, vocab: list[str], indptr: Any, indices: Any, tf: Any, new_no: Any) -> None:
        counts = np.diff(indptr)
        terms = np.repeat(np.arange(len(vocab), dtype=np.int64), counts)
        live = new_no[indices] >= 0
        self.vocabs.append(vocab)
        self.terms.append(terms[live])
        self.docs.append(new_no[indices[live]])
        self.tf.append(np.asarray(tf)[live].astype(np.float32))

    def add_counts(self, items: Sequence[tuple[int, Sequence[str]]]) -> None:
        local: dict[str, int] = {}
        t_list, d_list, f_list = [], [], []
        for no, words in items:
            for term, tf in Counter(words).items():
                t_list.append(local.setdefault(term, len(local)))
                d_list.append(no)
                f_list.append(tf)
        self.vocabs.append(list(local))
        self.terms.append(np.array(t_list, dtype=np.int64))
        self.docs.append(np.array(d_list, dtype=np.int64))
        self.tf.append(np.array(f_list, dtype=np.float32))

    def global_terms(self, index: dict[str, int]) -> I64:
        parts = [
            np.array([index[t] for t in v], dtype=np.int64)[p] if len(p) else p
            for v, p in zip(self.vocabs, self.terms, strict=True)
        ]
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    def csc(self, term_col: I64, nterms: int, tf_dtype: Any) -> tuple[Any, Any, Any]:
        doc_col = np.concatenate(self.docs) if self.docs else np.empty(0, np.int64)
        tf_col = np.concatenate(self.tf) if self.tf else np.empty(0, np.float32)
        order = np.lexsort((doc_col, term_col))
        indptr = np.zeros(nterms + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_col, minlength=nterms), out=indptr[1:])
        if np.dtype(tf_dtype) == np.uint16:
            tf_col = np.minimum(tf_col, 65535)
        return indptr, doc_col[order].astype(np.int32), tf_col[order].astype(tf_dtype)


def build(
    docs: Sequence[Doc],
    *,
    model: str,
    dim: int,
    parts: Iterable[tuple[Shard, Any]] = (),
    reuse_lists: bool = False,
) -> bytes:
    """Serialise a shard of `parts` (format-2 shards with a keep-mask over their docs, in
    order, each taken once: a caller may drop it then) followed by `docs` (turn a format-1
    part into docs first: `docs_of`).

    `reuse_lists` (maintenance's merges of big shards, memlake.search.merging): the IVF index
    is the union of the parts' (their centroids side by side, every kept row in the list it
    was in; rows of a part without one go to the nearest of those centroids) instead of
    trained anew: no k-means and no assignment of every row, and the lists a search probes
    over the merged shard are those it probed over its parts (ivf.plan_probes)."""
    ep, ps = _Postings(), _Postings()
    cols: dict[str, list[Any]] = {k: [] for k in ("seq", "t_start", "t_end", "doc_len")}
    pcols: dict[str, list[Any]] = {k: [] for k in ("p_doc", "p_start", "p_end", "p_len")}
    ids: list[str] = []
    contexts: dict[str, int] = {}
    ctx_col: list[Any] = []
    vectors: list[Any] = []
    chunk_doc: list[Any] = []
    chunk_passage: list[Any] = []
    kept_lists: list[tuple[Any, Any]] = []  # per part: see _union_lists
    offset = p_offset = 0

    def ctx_no(name: str | None) -> int:
        return NO_CONTEXT if name is None else contexts.setdefault(name, len(contexts))

    for shard, keep in parts:
        if shard.model != model or shard.dim != dim:
            raise ValueError(f"shard of {shard.model}/{shard.dim} cannot merge into {model}/{dim}")
        if not shard.has_passages:
            raise ValueError("a format-1 shard is merged through docs_of")
        keep = np.ones(shard.n, bool) if keep is None else np.asarray(keep, bool)
        new_no = np.where(keep, np.cumsum(keep) - 1 + offset, -1)
        ep.add_csc(shard.vocab, shard.indptr, shard.indices, shard.tf, new_no)
        p_keep = keep[shard.p_doc]
        p_new = np.where(p_keep, np.cumsum(p_keep) - 1 + p_offset, -1)
        ps.add_csc(shard.vocab, shard.p_indptr, shard.p_indices, shard.p_tf, p_new)
        for name in cols:
            cols[name].append(getattr(shard, name)[keep])
        for name in pcols:
            pcols[name].append(getattr(shard, name)[p_keep])
        pcols["p_doc"][-1] = new_no[pcols["p_doc"][-1]]
        ids.extend(np.asarray(shard.id_list, dtype=object)[keep].tolist())
        ctx_used = set(np.unique(shard.ctx[keep]).tolist())  # a dropped doc's context goes
        remap = np.array(
            [ctx_no(c) if i in ctx_used else NO_CONTEXT for i, c in enumerate(shard.contexts)]
            + [NO_CONTEXT],
            dtype=np.int32,
        )
        ctx_col.append(remap[shard.ctx[keep]])  # -1 indexes the trailing NO_CONTEXT
        live = keep[shard.chunk_doc]
        vectors.append(shard.vectors[live])
        if reuse_lists:
            own = shard.ivf_lists()
            kept_lists.append((None, int(live.sum())) if own is None else (own[0], own[1][live]))
        chunk_doc.append(new_no[shard.chunk_doc[live]])
        cp = shard.chunk_passage[live]
        chunk_passage.append(np.where(cp >= 0, p_new[np.maximum(cp, 0)], -1))
        offset += int(keep.sum())
        p_offset += int(p_keep.sum())

    if docs:
        ep.add_counts([(offset + i, d.terms) for i, d in enumerate(docs)])
        flat: list[tuple[int, Sequence[str]]] = []
        for i, doc in enumerate(docs):
            if doc.vectors.ndim != 2 or doc.vectors.shape[1] != dim or not len(doc.vectors):
                raise ValueError(f"episode {doc.id} needs (rows >= 1, {dim}) vectors")
            passages = list(doc.passages) or [(-1, -1, doc.terms)]
            first = p_offset + len(flat)
            flat.extend((first + j, p[2]) for j, p in enumerate(passages))
            pcols["p_doc"].append(np.full(len(passages), offset + i))
            pcols["p_start"].append(np.array([p[0] for p in passages]))
            pcols["p_end"].append(np.array([p[1] for p in passages]))
            pcols["p_len"].append(np.array([len(p[2]) for p in passages]))
            vectors.append(np.asarray(doc.vectors, dtype=np.float32))
            chunk_doc.append(np.full(len(doc.vectors), offset + i))
            vp = np.asarray(doc.vector_passages or range(len(doc.vectors)), dtype=np.int64)
            if len(vp) != len(doc.vectors) or vp.max(initial=-1) >= len(passages):
                raise ValueError(f"episode {doc.id}: vector_passages do not match its passages")
            chunk_passage.append(np.where(vp >= 0, vp + first, -1))
        ps.add_counts(flat)
        p_offset += len(flat)
        cols["seq"].append(np.array([d.seq for d in docs]))
        cols["t_start"].append(np.array([d.t_start for d in docs]))
        cols["t_end"].append(np.array([d.t_end for d in docs]))
        cols["doc_len"].append(np.array([len(d.terms) for d in docs]))
        ids.extend(d.id for d in docs)
        ctx_col.append(np.array([ctx_no(d.context) for d in docs]))
        offset += len(docs)

    # one sorted vocabulary (terms of episodes and passages); postings sorted by (term, doc)
    # (terms left without a live posting are dropped)
    every = sorted({t for post in (ep, ps) for v in post.vocabs for t in v})
    index = {t: i for i, t in enumerate(every)}
    e_terms, p_terms = ep.global_terms(index), ps.global_terms(index)
    used = np.zeros(len(every), bool)
    used[e_terms] = True
    used[p_terms] = True
    renum = np.cumsum(used) - 1
    vocab = [t for t, u in zip(every, used.tolist(), strict=True) if u]
    indptr, indices, tf = ep.csc(renum[e_terms], len(vocab), np.float32)
    p_indptr, p_indices, p_tf = ps.csc(renum[p_terms], len(vocab), np.uint16)

    def cat(parts: list[Any], dtype: Any) -> Any:
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.empty(0, dtype)

    head = {"format": FORMAT, "model": model, "dim": dim, "k1": K1, "b": B}
    head["contexts"] = list(contexts)
    arrays = {
        "header": np.frombuffer(json.dumps(head).encode(), dtype=np.uint8),
        "ids": _blob(ids),
        "vocab": _blob(vocab),
        "seq": cat(cols["seq"], np.int64),
        "t_start": cat(cols["t_start"], np.int64),
        "t_end": cat(cols["t_end"], np.int64),
        "ctx": cat(ctx_col, np.int32),
        "doc_len": cat(cols["doc_len"], np.float32),
        "indptr": indptr,
        "indices": indices,
        "tf": tf,
        "vectors": cat(vectors, np.float32).reshape(-1, dim),
        "chunk_doc": cat(chunk_doc, np.int32),
        "p_doc": cat(pcols["p_doc"], np.int32),
        "p_start": cat(pcols["p_start"], np.int32),
        "p_end": cat(pcols["p_end"], np.int32),
        "p_len": cat(pcols["p_len"], np.float32),
        "p_indptr": p_indptr,
        "p_indices": p_indices,
        "p_tf": p_tf,
        "chunk_passage": cat(chunk_passage, np.int32),
    }
    del vectors  # the parts' copies (a merge of big shards holds them twice otherwise)
    if len(arrays["vectors"]) >= ivf.IVF_MIN_ROWS:  # format 3: the IVF index, trained here
        union = _union_lists(kept_lists, arrays["vectors"]) if reuse_lists else None
        if union is None:
            arrays.update(ivf.train(arrays["vectors"]))
        else:
            arrays.update(ivf.index_arrays(arrays["vectors"], *union))
        # format 5: the re-score vectors of an IVF shard in half precision (decision 2504)
        arrays["vectors"] = arrays["vectors"].astype(np.float16)
        # and the same rows in list order: a cold search's re-score candidates lie together
        # with the others of their probed lists, a few ranges instead of one a row (4401)
        rows = np.asarray(arrays["ivf_rows"], np.int64)
        arrays[LIST_VECTORS] = arrays["vectors"][rows]
        # and every term's postings of both kinds together: a term one range, not four (4401)
        arrays[term_postings.TERM_POSTINGS] = term_postings.build(arrays)
    # the arrays a ranged open reads first lie together: a few ranges (decision 4401)
    arrays = {n: arrays[n] for n in EAGER if n in arrays} | arrays
    sink = io.BytesIO()
    np.savez(sink, **arrays)
    del arrays  # before the copy of the bytes: a merge would hold its shard three times
    return sink.getvalue()


def _union_lists(kept: Sequence[tuple[Any, Any]], x: Any) -> tuple[Any, Any] | None:
    """(centroids, list of each row of `x`) from the parts' IVF lists, per part (centroids,
    list of each kept row) or (None, kept rows) without an IVF (None: no part has one). Rows
    in no part's list (a part without IVF, new docs) go to the nearest centroid."""
    if all(c is None for c, _ in kept):
        return None
    centroids, lists = [], np.full(len(x), -1, np.int64)
    base = row = 0
    for c, own in kept:
        if c is None:
            row += own
            continue
        lists[row : row + len(own)] = own + base
        centroids.append(c)
        base, row = base + len(c), row + len(own)
    union = np.concatenate(centroids)
    missing = np.flatnonzero(lists < 0)
    if len(missing):
        lists[missing] = ivf.assign(x[missing], union)
    return union, lists
