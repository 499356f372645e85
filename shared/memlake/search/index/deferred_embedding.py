"""A write never waits on the embedder (issue 47, decision 4702).

Vectors are an optional side of an episode: its words are searchable as soon as its commit is,
and the deferred pass (memlake.search.backfill) embeds whatever passages a write left pending.
So when the embedding endpoint fails (a retryable EmbeddingError: down, throttled, timing out)
or does not answer within WRITE_DEADLINE seconds, a write stores the episode with every passage
pending (vectors_pending in its result) instead of failing, and the deferred pass catches up
once the endpoint answers again. An error that retrying cannot help (a model that does not
exist, a bad key) still fails the write: maintenance could not catch up either.
"""

from __future__ import annotations

import logging
from concurrent.futures import TimeoutError as FutureTimeout

from memlake.embed.base import Embedder, EmbeddingError
from memlake.pools import LazyPool
from memlake.search.index.passages import Embedded, Passage, embed_passages

log = logging.getLogger(__name__)

#: seconds a write waits for its passages' vectors before it commits them pending
WRITE_DEADLINE = 5.0
_WRITE_EMBEDS = LazyPool(4, "memlake-write-embed")


def embed_or_defer(
    content_hash: str, passages: list[Passage], embedder: Embedder, limit: int
) -> Embedded:
    """embed_passages within WRITE_DEADLINE, or the passages with none embedded when the
    endpoint fails retryably or is slower (what the late call returns is dropped)."""
    if limit <= 0 or not passages:
        return embed_passages(content_hash, passages, embedder, limit)
    call = _WRITE_EMBEDS.get().submit(embed_passages, content_hash, passages, embedder, limit)
    try:
        return call.result(timeout=WRITE_DEADLINE)
    except FutureTimeout:
        # still queued behind calls to a hung endpoint: never started; running: its result
        # is dropped (the deferred pass embeds the passages later)
        call.cancel()
        why = f"no answer within {WRITE_DEADLINE:g} s"
    except EmbeddingError as e:
        if not e.retryable:
            raise
        why = e.message
    log.warning(
        "embedding failed (%s): the episode is stored with %d passages pending for the"
        " deferred pass",
        why,
        len(passages),
    )
    return embed_passages(content_hash, passages, embedder, 0)
