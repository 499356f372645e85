"""What of an episode is indexed, and how text becomes BM25 terms.

BM25 terms: lower-cased word tokens (bm25s's default pattern, two or more word characters),
English stopwords removed (bm25s's 179-word STOPWORDS_EN_PLUS: conversation is full of "we",
"did", "my", which the 33-word Lucene list keeps), Snowball English stems (PyStemmer). Title,
summary and tags are short and written to describe the episode, so their terms count
FIELD_WEIGHT times (docs/decisions/0301-hybrid-search-tuning.md has the measurement).

Vectors: the content is cut into overlapping windows the model can read (memlake.embed.chunking);
title, summary and tags, when present, form one more short text of their own.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

FIELD_WEIGHT = 2
# bm25s's default token pattern is r"(?u)\b\w\w+\b": a maximal run of two or more word
# characters, which this pattern finds without the word-boundary checks (a third faster)
_TOKEN = re.compile(r"\w\w+")
#: word -> stem of the words terms_of_each has met (a tenant's vocabulary is bounded; the map is
#: replaced, never cleared under a reader, when it grows past STEM_MEMO words)
STEM_MEMO = 200_000
_stems: dict[str, str] = {}
_local = threading.local()  # PyStemmer objects are not thread-safe


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from memlake.search.index.stopwords import STOPWORDS_EN_PLUS  # bm25s's list, copied

    return frozenset(STOPWORDS_EN_PLUS)


def _stemmer() -> Any:
    stem = getattr(_local, "stemmer", None)
    if stem is None:
        import Stemmer

        stem = _local.stemmer = Stemmer.Stemmer("english")
    return stem


def terms(text: str) -> list[str]:
    """BM25 terms of a text, in order (repeats kept)."""
    stop = _stopwords()
    words = [w for w in _TOKEN.findall(text.lower()) if w not in stop and len(w) <= 64]
    return _stemmer().stemWords(words) if words else []


def terms_of_each(texts: list[str]) -> list[list[str]]:
    """terms() of each text; a word is stemmed once per process (a chat repeats its words, and
    stemming is most of the cost)."""
    global _stems
    stop = _stopwords()
    words = [
        [w for w in _TOKEN.findall(t.lower()) if w not in stop and len(w) <= 64] for t in texts
    ]
    stems = _stems
    new = list({w: None for ws in words for w in ws if w not in stems})
    if new:
        if len(stems) + len(new) > STEM_MEMO:
            stems = _stems = {}
        stems.update(zip(new, _stemmer().stemWords(new), strict=True))
    return [[stems[w] for w in ws] for ws in words]


def _tags(row: dict[str, Any]) -> list[str]:
    return [str(t) for t in (row.get("tags") or []) if t]


def header_text(row: dict[str, Any]) -> str:
    """Title, summary and tags of an episode as one short text ('' when it has none)."""
    parts = [row.get("title") or "", row.get("summary") or "", " ".join(_tags(row))]
    return "\n".join(p for p in parts if p.strip())


def episode_terms(row: dict[str, Any], field_weight: int | None = None) -> list[str]:
    """BM25 terms of an episode row: content once, title/summary/tags `field_weight` times
    (default FIELD_WEIGHT)."""
    header = terms(header_text(row))
    weight = FIELD_WEIGHT if field_weight is None else field_weight
    return header * weight + terms(row.get("content") or "")


def vector_texts(row: dict[str, Any]) -> tuple[str, str]:
    """(header, content): the two texts an episode's vectors are computed from."""
    return header_text(row), row.get("content") or ""


def unique_terms(texts: Iterable[str]) -> list[str]:
    """Distinct terms of a query, first occurrence first."""
    seen: dict[str, None] = {}
    for text in texts:
        for t in terms(text):
            seen.setdefault(t, None)
    return list(seen)


def passage_terms(
    row: dict[str, Any], starts: Iterable[int], ends: Iterable[int]
) -> list[tuple[int, int, list[str]]]:
    """(start, end, BM25 terms) of every passage of an episode row: start/end -1 is the
    title/summary/tags text, others cut from the content."""
    header, content = vector_texts(row)
    return [
        (s, e, terms(header if s < 0 else content[s:e])) for s, e in zip(starts, ends, strict=True)
    ]
