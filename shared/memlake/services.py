"""The one place that builds long-lived dependencies (store, lake) from settings.

Built once per process and reused across requests (and warm Lambda invocations).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from memlake.config import Settings, settings
from memlake.errors import ConfigurationError
from memlake.lake import Lake
from memlake.store.base import ObjectStore

#: Features that extend every Lake built here (commit hooks: search indexing) append a
#: function(lake, settings) at import; build() loads the features, then calls each.
LAKE_EXTENSIONS: list[Callable[[Lake, Settings], object]] = []


def make_store(cfg: Settings) -> ObjectStore:
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

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    @classmethod
    def build(cls, cfg: Settings, store: ObjectStore | None = None) -> Services:
        from memlake.features import load_features

        store = store if store is not None else make_store(cfg)
        lake = Lake(store, cache_bytes=cfg.cache_bytes, dim=cfg.embed_dim)
        load_features()
        for extend in LAKE_EXTENSIONS:
            extend(lake, cfg)
        return cls(settings=cfg, lake=lake)


@lru_cache(maxsize=1)
def default_services() -> Services:
    return Services.build(settings())
