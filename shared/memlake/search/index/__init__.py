"""The stored index: what a search reads, and how writes build and reshape it.

Nothing here knows how a query is ranked (memlake.search.query) or which embedder runs
(memlake.search.searcher); it imports only the lake, the store and small leaves below it.

- analysis, shared by index builds and queries: `text` (terms, `stopwords`), `passages` (an
  episode cut into passages, their vectors), `arrays` (numpy array types)
- the per-shard hot loops of a search: `kernels` (numba's nogil kernels or their numpy twins,
  decision 2502)
- one shard object: `shard` (Shard: BM25 half + vector half), `shard_build`, `shard_bm25`,
  `shard_vectors`, `shard_source` (whole or ranged arrays)
- vector codes: `ivf` (coarse lists), `ivf_codes` (PQ fast-scan), `vector_scan` (SQ8 scans)
- ranged reads of big objects: `npz_format`, `ranges` (RangedNpz), `range_cache`
- the tenant's shards: `state` (the manifest's search state), `layout` (LSM tiers, merges),
  `cache` (loaded shards), `chunks` (the episode_chunks table)
"""
