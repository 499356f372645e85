"""A search's likely hits, named before they are ranked, so that their rows are read meanwhile
(decision 4401).

A cold search read its hits' episode segments only once both retrievers were done and fused:
one round trip more after the vector side's re-score rows, and their Parquet decoding (~2 ms
a segment) after it too. The BM25 side is done first (its postings come in the round of the
probed lists, and it is scored while the re-score rows are read), and its best docs are
mostly the hits: its `count` best episodes are handed to `read` (TableView.read_ahead: their
segments read in the background, once however many ask), and the lookup of the final hits
waits for those reads or reads what the guess missed (decision 4401).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from memlake.search.index.shard import Shard


class HitsAhead:
    """Names a search's likely hits to `read`: the BM25 side's `count` best episodes."""

    def __init__(self, read: Callable[[list[str]], None], count: int) -> None:
        self.read, self.count = read, count

    def bm25(self, shards: list[Shard], tops: Iterable[tuple[int, Any, Any]]) -> None:
        """The episodes of the best BM25 scores over the shards: (shard, its docs, scores)."""
        parts = [(no, docs, scores) for no, docs, scores in tops if len(docs)]
        if not parts or self.count <= 0:
            return
        nos = np.concatenate([np.full(len(d), no, np.int64) for no, d, _ in parts])
        docs = np.concatenate([np.asarray(d, np.int64) for _, d, _ in parts])
        scores = np.concatenate([np.asarray(s, np.float32) for _, _, s in parts])
        best = np.argsort(-scores, kind="stable")[: self.count].tolist()
        ids = [shards[int(nos[at])].id_list[int(docs[at])] for at in best]
        self.read(list(dict.fromkeys(ids)))
