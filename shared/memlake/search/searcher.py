"""The search state one lake's reads and writes share: the embedder, loaded index shards and
recently computed vectors.

Services builds one Searcher per lake (memlake.services). Reads (memlake.search.hybrid, best
passages) embed queries and load shards through it; the write side (memlake.search.indexing,
installed by the search feature) embeds staged episodes and writes shards through the same
caches, so a shard written by a commit is warm for the next search.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memlake.config import Settings
from memlake.embed.base import Embedder
from memlake.lake.keys import tenant_prefix
from memlake.lake.manifest import ERASURE_EPOCH
from memlake.pools import STORE_IO
from memlake.search.index.cache import ShardCache
from memlake.search.index.deferred_embedding import embed_or_defer
from memlake.search.index.passages import Embedded, EmbeddedCache, embed_passages, plan
from memlake.search.index.text import vector_texts
from memlake.search.query import sides
from memlake.search.query.rerank import make_reranker
from memlake.search.query.reranker import Reranker

if TYPE_CHECKING:
    from memlake.lake.snapshot import Snapshot

EMBED_CACHE = 256  # texts
EMBED_CACHE_VECTORS = 65_536  # ~100 MB at 384 dims


_UNSET: Any = object()


class Searcher:
    """Per-lake search state: the embedder (loaded on first use), the reranker (built on first
    use; None when Settings.reranker is "none"), shards, computed vectors."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        cache_bytes: int = 1 << 30,
        reranker: Reranker | None = _UNSET,
    ) -> None:
        self.settings = settings
        self._embedder = embedder
        self._reranker: Reranker | None = reranker
        disk = Path(settings.shard_cache_dir) if settings.shard_cache_dir else None
        self.shards = ShardCache(cache_bytes, disk)
        STORE_IO.prestart()  # a cold search's rounds then find its threads started (4401)
        sides.prestart()
        self.embedded = EmbeddedCache(EMBED_CACHE, EMBED_CACHE_VECTORS)
        #: True once memlake.search.indexing.install made the lake's commits embed and index
        #: episodes; writes embed ahead, and the deferred pass runs, only then
        self.indexing = False
        #: tenant -> the erasure epoch of the newest manifest this process searched
        self._erasure_epochs: dict[str, int] = {}

    def forget_objects(self, keys: list[str]) -> None:
        """Objects an erasure removed: dropped from the shard caches, memory and disk."""
        self.shards.forget(keys)

    def settle_erasures(self, snap: Snapshot) -> None:
        """Once per erasure of a tenant (its manifest's `erasure_epoch` grew: another process
        erased, memlake.erasure), drop what the caches hold of that tenant's objects the
        manifest no longer names, so this process's memory and disk let go of them too."""
        epoch = int(snap.extra.get(ERASURE_EPOCH, 0))
        seen = self._erasure_epochs.get(snap.tenant)
        if seen is not None and epoch <= seen:
            return
        self._erasure_epochs[snap.tenant] = epoch
        if epoch:
            self.shards.keep_only(tenant_prefix(snap.tenant), snap.manifest.all_keys())

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from memlake.embed import make_embedder
            from memlake.embed.api_keys import key_source

            cfg = self.settings
            if cfg.embedder == "bedrock":
                self._embedder = make_embedder(
                    "bedrock", model_id=cfg.bedrock_model, dimensions=cfg.bedrock_dimensions
                )
            elif cfg.embedder == "openai":
                self._embedder = make_embedder(
                    "openai",
                    model=cfg.embed_model,
                    dimensions=cfg.embed_dimensions,
                    base_url=cfg.openai_base_url,
                    api_key=key_source(
                        cfg.openai_api_key, cfg.openai_api_key_secret, cfg.openai_api_key_parameter
                    ),
                )
            else:
                from memlake.embed.model_files import find_model

                folder = find_model(
                    cfg.model_dir,
                    cfg.model_cache,
                    download=cfg.model_download,
                    endpoint=cfg.hf_endpoint,
                ).folder
                if cfg.embed_threads:
                    self._embedder = make_embedder(
                        "minilm", model_dir=folder, threads=cfg.embed_threads
                    )
                else:  # the process-wide instance of that folder
                    self._embedder = make_embedder("minilm", model_dir=folder)
        return self._embedder

    @property
    def reranker(self) -> Reranker | None:
        if self._reranker is _UNSET:
            self._reranker = make_reranker(self.settings)
        return self._reranker

    def embed_query(self, text: str) -> np.ndarray:
        return self.embedder.embed([text])[0]

    def content_hash(self, row: dict[str, Any]) -> str:
        header, content = vector_texts(row)
        raw = "\0".join((self.embedder.name, str(self.embedder.dim), header, content))
        return hashlib.sha256(raw.encode()).hexdigest()

    def embed_row(
        self,
        row: dict[str, Any],
        content_hash: str | None = None,
        *,
        limit: int | None = None,
        defer: bool = False,
    ) -> Embedded:
        """An episode row's passages with the vectors of the first `limit` of them (default
        Settings.embed_sync_passages), computed once per distinct text. `defer` (a write):
        none of them when the embedder fails or is slow (deferred_embedding)."""
        h = content_hash or self.content_hash(row)
        hit = self.embedded.get(h)
        if hit is not None:
            return hit
        cap = self.settings.embed_sync_passages if limit is None else limit
        embed = embed_or_defer if defer else embed_passages
        return self.embedded.remember(embed(h, plan(row, self.embedder), self.embedder, cap))
