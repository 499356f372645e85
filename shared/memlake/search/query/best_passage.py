"""The passage of an episode that best matches a query (every search_episodes hit shows one).

When the search itself says which content passage matched (SearchHit.passage), that one is
shown (hit_span); otherwise it is picked here.

The candidates are the content passages the search layer already cut (the `episode_chunks`
row's `starts`/`ends`: memlake.search.index.passages), so no text is re-chunked and every offset is
one the index knows. Words decide first: the passage with the best BM25 score over the
candidates' texts (idf over this episode's passages, so a term rare in the episode counts
most), and among passages within NEAR_TIE of it the one closest in meaning (cosine to the query
vector, for passages already embedded). When no query word occurs in any passage, the closest
in meaning wins; with neither, the first. An episode without a usable chunks row (none yet,
another model, offsets that do not fit the content) is cut by the same planner the index uses
(tokenizer only, no model run) and ranked by words alone.

The winner is widened with the text around it to about PASSAGE_CHARS characters (a 64-token
window alone is two sentences), ending on whitespace where one is near. Offsets are Python
string indices (Unicode code points) into `content`: content[start:end] == text.
docs/decisions/1113 has the reasons.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from memlake.embed.base import Embedder
from memlake.search.index.chunks import CHUNKS_TABLE
from memlake.search.index.passages import HEADER, Embedded, plan
from memlake.search.index.text import terms, unique_terms

PASSAGE_CHARS = 600
SNAP_CHARS = 40  # how far an edge may move to land on whitespace
NEAR_TIE = 0.1  # BM25 scores this close to the best count as a tie
K1, B = 1.5, 0.75


@dataclass(frozen=True)
class Span:
    start: int
    end: int


def _bm25(texts: list[str], query_terms: list[str]) -> list[float]:
    docs = [Counter(terms(t)) for t in texts]
    if not query_terms or not docs:
        return [0.0] * len(texts)
    lengths = [sum(d.values()) for d in docs]
    avg = (sum(lengths) / len(lengths)) or 1.0
    n = len(docs)
    idf = {}
    for t in query_terms:
        df = sum(1 for d in docs if t in d)
        if df:
            idf[t] = math.log1p((n - df + 0.5) / (df + 0.5))
    scores = []
    for doc, length in zip(docs, lengths, strict=True):
        norm = K1 * (1 - B + B * length / avg)
        scores.append(sum(w * doc[t] / (doc[t] + norm) for t, w in idf.items() if t in doc))
    return scores


def _candidates(
    embedder: Embedder, chunks: dict[str, Any] | None, content: str
) -> tuple[list[Span], list[int], np.ndarray]:
    """Content passages, each one's position among the row's passages, and the row's vectors
    (vectors[i] embeds passage i; later passages are pending)."""
    none = np.zeros((0, embedder.dim), np.float32)
    if chunks is not None and chunks.get("model") == embedder.name:
        emb = Embedded.from_row(chunks, embedder.dim)
        pairs = [
            (i, Span(s, e))
            for i, (s, e) in enumerate(zip(emb.starts, emb.ends, strict=True))
            if s != HEADER
        ]
        if pairs and all(0 <= sp.start < sp.end <= len(content) for _, sp in pairs):
            return [sp for _, sp in pairs], [i for i, _ in pairs], emb.vectors
    planned = [p for p in plan({"content": content}, embedder) if p.start != HEADER]
    return [Span(p.start, p.end) for p in planned], [], none


def best_span(
    embedder: Embedder,
    row: dict[str, Any],
    chunks: dict[str, Any] | None,
    query: str,
    query_vector: np.ndarray | None,
) -> Span:
    """The best-matching passage of `row`'s content, widened (see the module doc)."""
    content = row.get("content") or ""
    if len(content) <= PASSAGE_CHARS:  # any pick widens to all of it: no need to rank
        return Span(0, len(content))
    spans, which, vectors = _candidates(embedder, chunks, content)
    if not spans:
        return _widen(Span(0, min(len(content), PASSAGE_CHARS)), content)
    lexical = _bm25([content[s.start : s.end] for s in spans], unique_terms([query]))
    cosine: list[float | None] = [None] * len(spans)
    if query_vector is not None and len(vectors):
        q = np.asarray(query_vector, np.float32)
        cosine = [float(vectors[i] @ q) if i < len(vectors) else None for i in which] or cosine
    return _widen(spans[_pick(lexical, cosine)], content)


def hit_span(
    embedder: Embedder,
    row: dict[str, Any],
    chunks: dict[str, Any] | None,
    query: str,
    query_vector: np.ndarray | None,
    found: tuple[int, int] | None,
) -> Span:
    """The passage shown for a hit: the one the search matched (`SearchHit.passage`), widened
    like the others, or when the search did not say (or its offsets do not fit the content)
    best_span's pick."""
    content = row.get("content") or ""
    if found is not None and 0 <= found[0] < found[1] <= len(content):
        return _widen(Span(*found), content)
    return best_span(embedder, row, chunks, query, query_vector)


def _pick(lexical: list[float], cosine: list[float | None]) -> int:
    """Words first: the best BM25 passage, the closest in meaning among those within
    NEAR_TIE of it; with no query word in any passage, the closest in meaning; else the first."""
    top = max(lexical)
    if top > 0:
        near = [i for i, s in enumerate(lexical) if s >= top * (1 - NEAR_TIE)]
        return max(near, key=lambda i: (cosine[i] if cosine[i] is not None else -2.0, -i))
    scored = [i for i, c in enumerate(cosine) if c is not None]
    return max(scored, key=lambda i: (cosine[i], -i)) if scored else 0


def _widen(span: Span, content: str) -> Span:
    """`span` grown evenly to about PASSAGE_CHARS, edges moved onto whitespace when near."""
    start, end = span.start, span.end
    missing = PASSAGE_CHARS - (end - start)
    if missing > 0:
        start = max(0, start - missing // 2)
        end = min(len(content), end + (missing - (span.start - start)))
        start = max(0, end - PASSAGE_CHARS) if end == len(content) else start
    # only an edge moved here is snapped: a passage's own edges (a turn's start) are kept
    if 0 < start < span.start:
        ahead = range(start, min(start + SNAP_CHARS, span.start))
        cut = next((i for i in ahead if content[i].isspace()), None)
        start = start if cut is None else cut + 1
    if span.end < end < len(content):
        back = range(end, max(end - SNAP_CHARS, span.end), -1)
        cut = next((i for i in back if content[i].isspace()), None)
        end = end if cut is None else cut
    return Span(start, max(start, end))


def chunk_rows(snap: Any, ids: list[str]) -> dict[str, dict[str, Any] | None]:
    """The `episode_chunks` rows of these episodes (None where there is none), their
    `vectors` as one (k, dim) float32 array read from Arrow without a Python float each (a
    row of 20 passages holds 7,680: ~0.2 ms as Python lists and ~0.2 ms more to convert)."""
    found = snap.table(CHUNKS_TABLE).lookup_arrow(ids, list(CHUNK_COLUMNS))
    return {rid: None if t is None else _chunk_row(t) for rid, t in found.items()}


CHUNK_COLUMNS = ("model", "content_hash", "starts", "ends", "vectors")


def _chunk_row(table: Any) -> dict[str, Any]:
    row = table.drop_columns(["vectors"]).to_pylist()[0]
    vectors = table.column("vectors").combine_chunks()  # list<fixed_size_list<float32, dim>>
    if vectors.null_count:
        row["vectors"] = None
    else:
        rows = vectors.flatten()  # the slice's rows only (.values would be the whole segment)
        values = rows.flatten().to_numpy(zero_copy_only=False)
        row["vectors"] = values.reshape(len(rows), rows.type.list_size)
    return row
