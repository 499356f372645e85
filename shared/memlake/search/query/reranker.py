"""What a reranker is (the Protocol a backend implements), its error, and the check every
backend runs on the scores it returns. The backends (memlake.search.query.rerank_bedrock) and
the reranking stage (memlake.search.query.rerank) import it."""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

from memlake.errors import MemlakeError


class RerankError(MemlakeError):
    """A reranker failed (service error, malformed answer). The search falls back to the
    fused order; `retryable` marks throttling and unavailability."""

    code = "rerank_error"

    def __init__(self, message: str, *, hint: str = "", retryable: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.retryable = retryable


@runtime_checkable
class Reranker(Protocol):
    """Scores passages against a query with a cross-encoder.

    `name` identifies the model; `score` returns one relevance in 0..1 per passage, in the
    given order (not sorted), or raises RerankError.
    """

    name: str

    def score(self, query: str, passages: list[str]) -> list[float]: ...


def checked_scores(scores: list[float], expected: int, name: str) -> list[float]:
    """`scores` as floats clamped to 0..1, or RerankError when the count is wrong or one is
    not a finite number."""
    if len(scores) != expected:
        raise RerankError(f"reranker {name} returned {len(scores)} scores for {expected} texts")
    out = []
    for s in scores:
        value = float(s)
        if not math.isfinite(value):
            raise RerankError(f"reranker {name} returned a score that is not a number: {s!r}")
        out.append(min(1.0, max(0.0, value)))
    return out
