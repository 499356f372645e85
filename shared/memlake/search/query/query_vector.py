"""A search's query vector, embedded ahead: on a pool thread while the search loads its shards
and runs BM25, and within a deadline when the embedder is an endpoint (issue 47, decision
4702): an endpoint that hangs costs a search its deadline, not its timeout and retries, and
the search answers by words (search_episodes' `degraded`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout

import numpy as np

from memlake.embed.base import Embedder, EmbeddingError
from memlake.pools import LazyPool
from memlake.search.index.deferred_embedding import REMOTE_DEADLINE

_EMBEDDERS = LazyPool(2, "memlake-embed")  # its own: a search never waits on a busy helper


def query_deadline(embedder: Embedder) -> float | None:
    """Seconds a search waits for its query's vector: an endpoint's REMOTE_DEADLINE (its class
    says `remote = True`); none for the local model (CPU alone, ~12 ms a query)."""
    return REMOTE_DEADLINE if getattr(embedder, "remote", False) else None


def embed_ahead(
    embed: Callable[[str], np.ndarray], query: str, deadline: float | None = None
) -> Future[np.ndarray]:
    """The query's vector, embedded on a pool thread while the search loads its shards and
    runs BM25 (the embedding's matrix products release the GIL: ~14 ms of MiniLM overlap the
    BM25 side's ~11 at 100k episodes); Sides.run takes the Future as its query vector.
    `deadline`: seconds from now after which asking for it raises a retryable EmbeddingError
    (an endpoint that hangs: the search answers by words, issue 47)."""
    call = _EMBEDDERS.get().submit(embed, query)
    return call if deadline is None else _WithinDeadline(call, deadline)


class _WithinDeadline(Future[np.ndarray]):
    """A query vector's Future whose result comes within a deadline or not at all: past it
    the call is taken back if it has not started (a hung endpoint gets no backlog) and a
    retryable EmbeddingError is raised. Only `done` and `result` are answered: what a search
    asks of its query vector."""

    def __init__(self, call: Future[np.ndarray], deadline: float) -> None:
        super().__init__()
        self._call, self._deadline = call, deadline
        self._until = time.monotonic() + deadline

    def done(self) -> bool:
        return self._call.done()

    def result(self, timeout: float | None = None) -> np.ndarray:
        try:
            return self._call.result(timeout=max(0.0, self._until - time.monotonic()))
        except (FutureTimeout, CancelledError):  # cancelled: a caller asked after the deadline
            self._call.cancel()
            raise EmbeddingError(
                f"the embedding endpoint gave no answer within {self._deadline:g} s",
                retryable=True,
            ) from None
