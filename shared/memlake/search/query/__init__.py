"""The query path: how the stored index is read for one search.

Imports the index (memlake.search.index) and never the runtime above it (the Searcher, the
hybrid search that ties these steps): what a step needs it takes as an argument.

- `params`: SearchParams, SearchHit and the bounds the tools use
- `retrieve` and `sides`: each retriever's top lists per shard, the two sides run together
- `fusion`: pure score fusion (convex, RRF, recency)
- `reranker` (the Protocol and its checks), `rerank` (the stage), `rerank_bedrock` (a backend)
- `best_passage`: the passage of a hit that is shown
"""
