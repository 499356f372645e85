"""Split long texts into overlapping windows that fit the embedding model.

Episodes run 600-1,500 word pieces while MiniLM reads 256 (including [CLS] and [SEP]), so a long
episode is embedded as several chunks. Windows are cut on word-piece token offsets from one
untruncated encoding of the whole text, so a chunk's token count is known exactly instead of
guessed from characters. Near the size limit a cut prefers, in order: a paragraph break, a line
break, the end of a sentence, a space, then any token that does not continue a word. Consecutive
chunks share about `overlap` tokens (the next one starts at a good boundary inside that region).

Guarantees: no text or whitespace-only text (nothing to tokenize) gives no chunk; a text of at
most `max_tokens - 2` word pieces gives one chunk covering all of it; otherwise every character
is in some chunk (the first starts at 0, the last ends at len(text), each starts before the
previous one ends), and `chunk.text == text[chunk.start_char:chunk.end_char]`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from tokenizers import Tokenizer

DEFAULT_CHUNK_TOKENS = 200
"""Tokens per chunk including [CLS]/[SEP], so 198 word pieces: below MiniLM's 256 on purpose,
smaller windows give more specific vectors, and there is headroom if re-tokenising a chunk on
its own yields a few more pieces than the slice it came from. To be tuned by measurement."""
DEFAULT_CHUNK_OVERLAP = 40
"""Word pieces shared by consecutive chunks, so a fact straddling a cut is whole in one of them."""

_SENTENCE_END = frozenset(".!?。！？")


@dataclass(frozen=True, slots=True)
class Chunk:
    """`text[start_char:end_char]` of the original text (end exclusive)."""

    start_char: int
    end_char: int
    text: str


class _HasTokenizer(Protocol):
    @property
    def tokenizer(self) -> Tokenizer: ...


_COPIES: dict[int, tuple[Tokenizer, Tokenizer]] = {}
_COPIES_LOCK = threading.Lock()


def _offsets_tokenizer(source: Tokenizer | _HasTokenizer) -> Tokenizer:
    """A tokenizer that neither truncates nor pads (a cached copy if `source`'s does)."""
    tok = source if isinstance(source, Tokenizer) else getattr(source, "raw_tokenizer", None)
    if tok is None:
        tok = getattr(source, "tokenizer", None)
    if not isinstance(tok, Tokenizer):
        raise TypeError("expected a tokenizers.Tokenizer or an object with a .tokenizer")
    if tok.truncation is None and tok.padding is None:
        return tok
    with _COPIES_LOCK:  # keyed by id(); the entry keeps the original alive so ids stay unique
        hit = _COPIES.get(id(tok))
        if hit is None:
            copy = Tokenizer.from_str(tok.to_str())
            copy.no_truncation()
            copy.no_padding()
            if len(_COPIES) >= 8:
                _COPIES.pop(next(iter(_COPIES)))
            hit = _COPIES[id(tok)] = (tok, copy)
    return hit[1]


def _boundary_rank(text: str, offsets: list[tuple[int, int]], tokens: list[str], p: int) -> int:
    """How good a cut between token p-1 and token p is (higher is better)."""
    gap = text[offsets[p - 1][1] : offsets[p][0]]
    if gap.count("\n") >= 2:
        return 5
    if "\n" in gap:
        return 4
    if gap and text[offsets[p - 1][0] : offsets[p - 1][1]] in _SENTENCE_END:
        return 3
    if gap:
        return 2
    return 1 if not tokens[p].startswith("##") else 0


def chunk_for_embedding(
    text: str,
    tokenizer: Tokenizer | _HasTokenizer,
    max_tokens: int = DEFAULT_CHUNK_TOKENS,
    overlap: int = DEFAULT_CHUNK_OVERLAP,
    *,
    lookback: int | None = None,
) -> list[Chunk]:
    """Cut `text` into chunks of at most `max_tokens - 2` word pieces ([CLS]/[SEP] take two).

    `tokenizer` is a `tokenizers.Tokenizer` (truncation and padding are ignored) or an embedder
    exposing one (`raw_tokenizer` or `tokenizer`); if it has an int `max_tokens`, `max_tokens`
    may not exceed it. `overlap` is at most half a window. `lookback` is how many tokens before
    the size limit a better boundary is searched (default a quarter of the window).
    """
    window = max_tokens - 2
    if window < 1:
        raise ValueError("max_tokens must be >= 3")
    if not 0 <= overlap <= window // 2:
        raise ValueError(f"overlap must be in 0..{window // 2} for max_tokens={max_tokens}")
    limit = getattr(tokenizer, "max_tokens", None)
    if isinstance(limit, int) and max_tokens > limit:
        raise ValueError(f"max_tokens={max_tokens} exceeds the model's {limit}")
    back = window // 4 if lookback is None else lookback
    if not 0 <= back < window:
        raise ValueError("lookback must be in 0..max_tokens-3")

    enc = _offsets_tokenizer(tokenizer).encode(text, add_special_tokens=False)
    offsets: list[tuple[int, int]] = list(enc.offsets)
    tokens: list[str] = list(enc.tokens)
    n = len(offsets)
    if n == 0:
        return []
    if n <= window:
        return [Chunk(0, len(text), text)]

    def best(lo: int, hi: int, latest: bool) -> int:
        """Best-ranked cut position in lo..hi; ties go to the latest (or earliest)."""
        span = range(hi, lo - 1, -1) if latest else range(lo, hi + 1)
        return max(span, key=lambda p: _boundary_rank(text, offsets, tokens, p))

    chunks: list[Chunk] = []
    start = 0
    while True:
        if n - start <= window:
            end = n
        else:
            end = best(max(start + 1, start + window - back), start + window, latest=True)
        start_char = 0 if start == 0 else offsets[start][0]
        end_char = len(text) if end == n else offsets[end][0]
        chunks.append(Chunk(start_char, end_char, text[start_char:end_char]))
        if end == n:
            return chunks
        if overlap == 0:
            start = end
        else:  # restart inside the overlap region, at a good boundary, as early as possible
            lo = max(start + 1, end - overlap)
            start = best(lo, max(lo, end - overlap // 2), latest=False)
