"""The one place that builds long-lived dependencies (store, lake, searcher) from settings and
assembles the features (memlake.features) into them.

Built once per process and reused across requests (and warm Lambda invocations).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from memlake.config import Settings, settings
from memlake.errors import ConfigurationError
from memlake.lake import Lake, Transaction
from memlake.search.searcher import Searcher
from memlake.store.base import ObjectStore

if TYPE_CHECKING:
    from memlake.features import Feature


def make_store(cfg: Settings) -> ObjectStore:
    store = _base_store(cfg)
    if cfg.store_latency:  # S3's timing on every request (memlake.store.latency)
        from memlake.store.latency import LatencyModel, LatencyStore

        return LatencyStore(store, LatencyModel.parse(cfg.store_latency))
    return store


def _base_store(cfg: Settings) -> ObjectStore:
    if cfg.store == "s3":
        if not cfg.bucket:
            raise ConfigurationError("MEMLAKE_BUCKET is required when MEMLAKE_STORE=s3")
        from memlake.store.s3 import S3Store

        return S3Store(cfg.bucket, prefix=cfg.prefix)
    from memlake.store.local import LocalStore

    return LocalStore(cfg.data_dir)


@dataclass
class Services:
    settings: Settings
    lake: Lake
    #: the lake's embedder and search caches, shared by searches and (when the search feature
    #: is installed) the commits that index episodes
    search: Searcher
    #: what delete_episode also removes in its transaction (the features' cleanups, in order)
    on_episode_delete: tuple[Callable[[Transaction, str], None], ...] = ()

    @classmethod
    def build(
        cls,
        cfg: Settings,
        store: ObjectStore | None = None,
        *,
        features: Iterable[Feature] | None = None,
    ) -> Services:
        """A lake with the tables of `features` (default: memlake.features.FEATURES), their
        delete cleanups, and each feature's install run once."""
        from memlake.features import FEATURES, episode_cleanups, table_catalog

        chosen = tuple(FEATURES if features is None else features)
        store = store if store is not None else make_store(cfg)
        lake = Lake(
            store, tables=table_catalog(chosen), cache_bytes=cfg.cache_bytes, dim=cfg.embed_dim
        )
        services = cls(
            settings=cfg,
            lake=lake,
            search=Searcher(cfg, cache_bytes=cfg.shard_cache_bytes),
            on_episode_delete=episode_cleanups(chosen),
        )
        for feature in chosen:
            if feature.install is not None:
                feature.install(services.lake, services.search)
        return services


@lru_cache(maxsize=1)
def default_services() -> Services:
    return Services.build(settings())
