"""A write never waits on the embedder (issue 47, decision 4702).

Vectors are an optional side of an episode: its words are searchable as soon as its commit is,
and the deferred pass (memlake.search.backfill) embeds whatever passages a write left pending.
So when the embedding endpoint fails (a retryable EmbeddingError: down, throttled, timing out)
or does not answer within its deadline (`deadline_for`), a write stores the episode with every
passage pending (vectors_pending in its result) instead of failing, and the deferred pass
catches up once the endpoint answers again. An error that retrying cannot help (a model that
does not exist, a bad key) still fails the write: maintenance could not catch up either.
"""

from __future__ import annotations

import logging
from concurrent.futures import TimeoutError as FutureTimeout

from memlake.embed.base import Embedder, EmbeddingError
from memlake.pools import LazyPool
from memlake.search.index.passages import Embedded, Passage, embed_passages

log = logging.getLogger(__name__)

#: seconds a write waits for its passages' vectors before it commits them pending: the local
#: model's (CPU alone: a long episode's 64 passages take ~1-2 s on a busy host) and an
#: endpoint's (`remote` embedders: a refused connection's retries take ~4.8 s, a hung one its
#: timeout; a write answers within ~2 s, issue 47's target)
WRITE_DEADLINE = 5.0
REMOTE_DEADLINE = 1.5


def deadline_for(embedder: Embedder) -> float:
    """How long a write (or a search's query) waits for this embedder (REMOTE_DEADLINE for an
    endpoint: its class says `remote = True`)."""
    return REMOTE_DEADLINE if getattr(embedder, "remote", False) else WRITE_DEADLINE


_WRITE_EMBEDS = LazyPool(4, "memlake-write-embed")


def embed_or_defer(
    content_hash: str, passages: list[Passage], embedder: Embedder, limit: int
) -> Embedded:
    """embed_passages within the embedder's deadline (deadline_for), or the passages with none
    embedded when the endpoint fails retryably or is slower (what the late call returns is
    dropped)."""
    if limit <= 0 or not passages:
        return embed_passages(content_hash, passages, embedder, limit)
    call = _WRITE_EMBEDS.get().submit(embed_passages, content_hash, passages, embedder, limit)
    deadline = deadline_for(embedder)
    try:
        return call.result(timeout=deadline)
    except FutureTimeout:
        # still queued behind calls to a hung endpoint: never started; running: its result
        # is dropped (the deferred pass embeds the passages later)
        call.cancel()
        why = f"no answer within {deadline:g} s"
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
