"""The features a memlake is assembled from, listed in one place.

A feature is its tables (each with the model `memlake import` checks its rows by), the cleanups
delete_episode runs in the same transaction for rows that point at a deleted episode, and an
optional install step on the assembled lake and searcher (the search feature hooks indexing
into the lake's commits). Nothing registers itself on import: Services.build takes a tuple of
features (FEATURES unless told otherwise) and builds the lake's table catalog, the delete
cleanups and the installs from it, so two Services built with different features share nothing.
docs/decisions/1140-features-assembled.md says why, and how to add a feature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from memlake import audit, episodes, idempotency, relationships
from memlake.erasure import requests as erasures
from memlake.lake.engine import Lake
from memlake.lake.schema import Catalog, TableSpec, catalog
from memlake.lake.txn import Transaction
from memlake.layers import tables as layers
from memlake.search import indexing
from memlake.search.index import backlog, chunks
from memlake.search.searcher import Searcher
from memlake.stored_rows import (
    AuditRow,
    BacklogRow,
    ChunksRow,
    ConceptRow,
    EpisodeRow,
    ErasureRow,
    LinkRow,
    MessageRow,
    RelationshipRow,
    ThreadRow,
)

#: Runs in delete_episode's transaction after the episode's tombstone is staged.
EpisodeCleanup = Callable[[Transaction, str], None]


@dataclass(frozen=True)
class Feature:
    name: str
    tables: tuple[TableSpec, ...] = ()
    on_episode_delete: tuple[EpisodeCleanup, ...] = ()
    #: called once per Services.build with its lake and searcher (takes no Services, so the
    #: features sit below the assembly that lists them)
    install: Callable[[Lake, Searcher], object] | None = None


def _checked(spec: TableSpec, model: type[Any]) -> TableSpec:
    return replace(spec, row_model=model)


_LAYER_ROWS = {
    layers.THREADS: ThreadRow,
    layers.MESSAGES: MessageRow,
    layers.CONCEPTS: ConceptRow,
    layers.LINKS: LinkRow,
}

EPISODES_FEATURE = Feature("episodes", tables=(_checked(episodes.TABLE_SPEC, EpisodeRow),))
SEARCH = Feature(
    "search",  # episode_chunks; every commit embeds its episodes and updates the index shards
    tables=(
        _checked(chunks.CHUNKS_SPEC, ChunksRow),
        _checked(backlog.BACKLOG_SPEC, BacklogRow),  # derived: not exported
    ),
    on_episode_delete=(chunks.drop_chunks,),
    install=indexing.install,
)
LAYERS = Feature(
    "layers",  # threads, their messages, concepts, concept links
    tables=tuple(_checked(spec, _LAYER_ROWS[spec.name]) for spec in layers.SPECS),
    on_episode_delete=(layers.on_episode_deleted,),
)
RELATIONSHIPS = Feature(
    "relationships",
    tables=(_checked(relationships.SPEC, RelationshipRow),),
    on_episode_delete=(relationships.cascade_delete,),
)
AUDIT = Feature("audit", tables=(_checked(audit.SPEC, AuditRow),))
ERASURE = Feature(  # deletes request erasure; maintenance removes the rows from every object
    "erasure",
    tables=(_checked(erasures.SPEC, ErasureRow),),  # derived: not exported, not imported
    on_episode_delete=(erasures.request_episode,),
)
IDEMPOTENCY = Feature(  # the keys of add_episode, add_thread, upsert_concept
    "idempotency", tables=(_checked(idempotency.SPEC, idempotency.IdempotencyRow),)
)

FEATURES: tuple[Feature, ...] = (
    EPISODES_FEATURE,
    SEARCH,
    LAYERS,
    RELATIONSHIPS,
    AUDIT,
    IDEMPOTENCY,
    ERASURE,
)


def table_catalog(features: Iterable[Feature] = FEATURES) -> Catalog:
    """name -> TableSpec of every table of `features` (a Lake is built with it)."""
    return catalog(spec for feature in features for spec in feature.tables)


def episode_cleanups(features: Iterable[Feature] = FEATURES) -> tuple[EpisodeCleanup, ...]:
    return tuple(cleanup for feature in features for cleanup in feature.on_episode_delete)
