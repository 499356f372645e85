"""Hybrid search: BM25 and vector retrieval fused by rank (see memlake.search.query.fusion)."""
