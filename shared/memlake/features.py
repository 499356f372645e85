"""Features that extend the episode store (search index, memory layers, relationship graph).

Each module listed here registers, when imported, its tables (memlake.lake.schema.register_table)
and its episode-delete cleanups (memlake.episodes.ON_DELETE). load_features() imports them all,
so every door (MCP endpoint, per-tool Lambda, CLI) sees the same tables and cleanups no matter
which tool module it imported first.
"""

from __future__ import annotations

from importlib import import_module

FEATURE_MODULES: tuple[str, ...] = (
    "memlake.search.indexing",  # hybrid search: episode_chunks table, index shards on commit
    "memlake.layers.tables",  # memory layers: threads, messages, concepts, concept links
    "memlake.relationships",  # relationship graph (+ its audit table)
    "memlake.idempotency",  # idempotency keys of add_episode, add_thread, upsert_concept
)

_loaded = False


def load_features() -> None:
    global _loaded
    if _loaded:
        return
    for name in FEATURE_MODULES:
        import_module(name)
    _loaded = True
