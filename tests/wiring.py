"""Tests' wiring: a Lake with every feature's tables, and Services around a lake a test built.

Services.build assembles the features for the doors; tests that build their own Lake (to inject
retries, crash hooks or counting stores) get the same catalog and delete cleanups from here,
without the search feature's commit hooks unless they install them.
"""

from __future__ import annotations

from typing import Any

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.embed.base import Embedder
from memlake.features import FEATURES, episode_cleanups, table_catalog
from memlake.lake import Lake
from memlake.search import indexing
from memlake.search.searcher import Searcher
from memlake.services import Services
from memlake.store.base import ObjectStore

CATALOG = table_catalog(FEATURES)


def bare_lake(store: ObjectStore, **kw: Any) -> Lake:
    """A Lake with every feature's tables and no commit hooks (no embedding)."""
    return Lake(store, tables=CATALOG, **kw)


def services_for(
    lake: Lake, settings: Settings | None = None, searcher: Searcher | None = None
) -> Services:
    cfg = settings or Settings()
    return Services(
        settings=cfg,
        lake=lake,
        search=searcher or Searcher(cfg, cache_bytes=cfg.shard_cache_bytes),
        on_episode_delete=episode_cleanups(FEATURES),
    )


def tool_context(
    principal: Principal,
    lake: Lake,
    settings: Settings | None = None,
    searcher: Searcher | None = None,
) -> ToolContext:
    return ToolContext(principal, services_for(lake, settings, searcher))


def indexed_context(
    principal: Principal, lake: Lake, settings: Settings, embedder: Embedder
) -> ToolContext:
    """A context whose lake indexes its commits (the search feature installed) with `embedder`."""
    searcher = Searcher(settings, embedder=embedder, cache_bytes=settings.shard_cache_bytes)
    indexing.install(lake, searcher)
    return tool_context(principal, lake, settings, searcher)
