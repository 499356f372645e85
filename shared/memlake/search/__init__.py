"""Hybrid search over episodes: BM25 and vectors over index shards, fused by score.

Three levels, imports pointing down (docs/architecture.md, tests/unit/test_import_graph.py):

- the runtime, here: `searcher` (one lake's embedder, caches and reranker), `hybrid` (one
  search), `indexing` (the commit hooks that embed and index), `backfill` (the deferred pass),
  `merging` (maintenance's merges of big shards);
- `query/`: how the index is read for one search (params, retrieval, fusion, rerank, passages);
- `index/`: what is stored (shard format, layout, vector codes, ranged reads, caches).
"""
