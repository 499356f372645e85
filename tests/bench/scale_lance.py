"""LanceDB 0.40 on the same rows and vectors as a scale_bench tenant (tests/bench/scale_bench.py).

One LanceDB row per passage: the episode number, the passage's text (the same offsets the
memlake shard indexes) and its vector, fed shard by shard while the tenant is built. Then:
exact hybrid (no vector index: a flat scan, its FTS index, its default RRF reranker, as
search_bench.lance does), the IVF_HNSW_SQ vector index built (cosine, LanceDB's defaults
otherwise) and the same hybrid query through it, and the indexed vector-only search's episode
recall@10 against exact (rows deduplicated to episodes, an episode at its best row).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
import warnings
from typing import Any

import numpy as np

DIM = 384


class Lance:
    def __init__(self, root: str | None = None) -> None:
        """A new table in `root` (None: a temporary directory)."""
        import lancedb

        self.root = root or tempfile.mkdtemp(prefix="lance-scale-")
        self.db = lancedb.connect(self.root)
        self.table: Any = None
        self.took = 0.0

    @classmethod
    def open(cls, root: str) -> Lance:
        """The table kept in `root`, with the indexes built there."""
        lance = cls(root)
        lance.table = lance.db.open_table("passages")
        return lance

    def add(
        self,
        first: int,
        rows: list[dict[str, Any]],
        spans: list[tuple[list[int], list[int]]],
        flat: np.ndarray,
    ) -> None:
        import pyarrow as pa

        t0 = time.perf_counter()
        per = len(flat) // len(rows)
        texts = [
            row["content"][s:e]
            for row, (starts, ends) in zip(rows, spans, strict=True)
            for s, e in zip(starts, ends, strict=True)
        ]
        batch = pa.table(
            {
                "ep": pa.array(np.repeat(np.arange(first, first + len(rows)), per), pa.int32()),
                "text": pa.array(texts),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1)), DIM),
            }
        )
        if self.table is None:
            self.table = self.db.create_table("passages", batch)
        else:
            self.table.add(batch)
        self.took += time.perf_counter() - t0

    def hybrid_ms(self, text: str, qvec: np.ndarray) -> float:
        """One hybrid query's time (its default RRF reranker, 10 rows)."""
        q = self.table.search(query_type="hybrid").vector(qvec).text(text).limit(10)
        t0 = time.perf_counter()
        q.to_arrow()
        return (time.perf_counter() - t0) * 1000

    def vector_episodes(self, qvec: np.ndarray) -> tuple[float, list[int]]:
        """(time, the 10 best episodes) of a vector-only search (200 rows, an episode at its
        best row)."""
        t0 = time.perf_counter()
        got = self.table.search(qvec).limit(200).select(["ep", "_distance"]).to_arrow()
        ms = (time.perf_counter() - t0) * 1000
        return ms, list(dict.fromkeys(got.column("ep").to_pylist()))[:10]

    def index_text(self) -> float:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_fts_index is deprecated in favour of FTS()
            self.table.create_fts_index("text")
        return time.perf_counter() - t0

    def index_vectors(self) -> float:
        t0 = time.perf_counter()
        self.table.create_index(metric="cosine", index_type="IVF_HNSW_SQ")
        return time.perf_counter() - t0

    def _hybrid(self, queries: list[str], qvecs: np.ndarray, count: int) -> float:
        times = [
            self.hybrid_ms(queries[i % len(queries)], qvecs[i % len(qvecs)])
            for i in range(count + 3)
        ]
        return statistics.median(times[3:])  # the first calls open the indexes

    def _recall(self, qvecs: np.ndarray, truth: list[set[int]]) -> tuple[float, float]:
        recalls, times = [], []
        for q, want in zip(qvecs, truth, strict=True):
            ms, eps = self.vector_episodes(q)
            times.append(ms)
            recalls.append(len(want & set(eps)) / 10)
        return statistics.mean(recalls), statistics.median(times)

    def measure(
        self,
        queries: list[str],
        qvecs: np.ndarray,
        truth: list[set[int]],
        exact_queries: int,
        indexed_queries: int,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {"lance_ingest_s": round(self.took, 1)}
        out["lance_fts_index_s"] = round(self.index_text(), 1)
        if exact_queries:
            out["lance_exact_hybrid_p50_ms"] = round(self._hybrid(queries, qvecs, exact_queries), 1)
        out["lance_vector_index_s"] = round(self.index_vectors(), 1)
        out["lance_indexed_hybrid_p50_ms"] = round(self._hybrid(queries, qvecs, indexed_queries), 2)
        recall, p50 = self._recall(qvecs[: len(truth)], truth)
        out["lance_indexed_vec_recall@10"] = round(recall, 4)
        out["lance_indexed_vec_only_p50_ms"] = round(p50, 2)
        return out

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
