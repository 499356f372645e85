"""The stored passage vectors of a search's hits, taken from the index shards that found them
(decision 4501): evidence scores a turn's meaning by the passages around it.

The `episode_chunks` rows hold the same passages and vectors, but a cold store reads a chunk
segment whole (~2.5 MB for 64 episodes of 20 passages), once for each hit: a cold evidence
search on the S3 model read 85 MB against 41 for ten passages. A shard keeps each vector row's
episode and passage (`chunk_doc`, ascending; `chunk_passage`), each passage's episode and
offsets (`p_doc`, `p_start`, `p_end`) in the arrays it opens with, and reads vector rows by
range: a hit's rows are one run, ~15 KB in half precision. `read_ahead` asks for those ranges
in the background while the search reads its hits' rows, and `stored_passages` asks for the
same ranges again (the range cache keeps each range as asked), so they come in the same
round. A passage search's best_span takes the same, for hits whose passage the search did not
name.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import numpy as np

from memlake.errors import MemlakeError
from memlake.pools import LazyPool
from memlake.search.index.ranges import Slice
from memlake.search.index.shard_source import RowReader
from memlake.search.query.params import SearchHit

_READS = LazyPool(8, "hit-vectors")
Located = tuple[Any, int]  # (Shard, doc)


def _span(shard: Any, doc: int) -> tuple[int, int]:
    lo, hi = np.searchsorted(shard.chunk_doc, [doc, doc + 1])
    return int(lo), int(hi)


def _by_shard(located: list[tuple[str, Located]]) -> list[tuple[Any, list[tuple[str, int]]]]:
    """(shard, [(id, doc)]) of the located hits whose shard has passages (format 2 on)."""
    out: dict[int, tuple[Any, list[tuple[str, int]]]] = {}
    for eid, (shard, doc) in located:
        if len(shard.p_start):
            out.setdefault(id(shard), (shard, []))[1].append((eid, doc))
    return list(out.values())


def _rows(shard: Any, spans: list[tuple[int, int]]) -> list[np.ndarray]:
    """Rows [lo, hi) of the shard's vectors for each span: from memory, or by range in one
    coalesced round (each span its own range: the ones read ahead are found in the cache)."""
    vectors = shard.vectors
    if isinstance(vectors, RowReader):
        return list(vectors.npz.many([Slice("vectors", lo, hi) for lo, hi in spans]))
    return [np.asarray(vectors[lo:hi]) for lo, hi in spans]


def read_ahead(located: list[tuple[str, Located]]) -> None:
    """Start reading the vector rows of these hits in the background (ranged shards only); a
    failed read is read again, and its error raised, by stored_passages."""
    for shard, docs in _by_shard(located):
        if not isinstance(shard.vectors, RowReader):
            continue
        spans = [s for _, doc in docs if (s := _span(shard, doc))[0] < s[1]]
        if spans:
            _READS.get().submit(_quietly, shard, spans)


def _quietly(shard: Any, spans: list[tuple[int, int]]) -> None:
    with suppress(MemlakeError):
        _rows(shard, spans)


def stored_passages(hits: list[SearchHit], model: str) -> dict[str, dict[str, Any]]:
    """Per hit the search located in a shard with passages, what its `episode_chunks` row
    holds: model, the offsets of all its passages (the title/summary/tags one at -1) and the
    vectors of the first ones, those embedded so far. Hits it did not locate, in a shard without
    passages (format 1) or whose rows are not the first passages in order, are left out: the
    caller reads their chunk rows."""
    parts = _by_shard([(h.id, h.located) for h in hits if h.located is not None])
    if len(parts) > 1:
        found = list(_READS.get().map(lambda part: _of_shard(part[0], part[1], model), parts))
    else:
        found = [_of_shard(shard, docs, model) for shard, docs in parts]
    return {eid: row for part in found for eid, row in part.items()}


def _of_shard(shard: Any, docs: list[tuple[str, int]], model: str) -> dict[str, Any]:
    spans = [_span(shard, doc) for _, doc in docs]
    wanted = [s for s in spans if s[0] < s[1]]
    blocks = iter(_rows(shard, wanted)) if wanted else iter(())
    out: dict[str, Any] = {}
    for (eid, doc), (lo, hi) in zip(docs, spans, strict=True):
        first, last = np.searchsorted(shard.p_doc, [doc, doc + 1])  # its passages, in order
        vectors = np.zeros((0, shard.dim), np.float32)
        if lo < hi:
            block = np.asarray(next(blocks), np.float32)
            passage = np.asarray(shard.chunk_passage[lo:hi], np.int64)
            embedded = passage >= 0  # -1: a placeholder row, nothing embedded yet
            place = passage[embedded] - first  # each row's passage among the episode's
            order = np.argsort(place, kind="stable")
            if not np.array_equal(place[order], np.arange(len(place))):
                continue  # not the first passages in order: its chunk row says
            vectors = block[embedded][order]
        out[eid] = {
            "model": model,
            "content_hash": "",
            "starts": shard.p_start[first:last].tolist(),
            "ends": shard.p_end[first:last].tolist(),
            "vectors": vectors,
        }
    return out
