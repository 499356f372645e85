"""The units of a search's hits and what scores them (memlake.search.query.evidence): their BM25
terms without the speaker label and each term's count (UnitCache), the stored passage vectors
overlapping each unit, the speaker and the hit's score."""

from __future__ import annotations

from typing import Any

import numpy as np

from memlake.search.index.passages import HEADER, Embedded
from memlake.search.query.params import SearchHit
from memlake.search.query.units import UNITS, Unit

K1, B = 1.2, 0.75


def _idf(counts: list[dict[str, int]], words: list[str]) -> np.ndarray:
    n = len(counts)
    df = np.array([sum(1 for c in counts if w in c) for w in words], dtype=np.float64)
    return np.where(df > 0, np.log1p((n - df + 0.5) / (df + 0.5)), 0.0)


class Pool:
    """The units of a search's hits with what scores them: their BM25 terms (label excluded),
    the stored passage vectors overlapping each, the speaker and the hit's score."""

    def __init__(
        self, hits: list[SearchHit], chunks: dict[str, dict[str, Any] | None], model: str
    ) -> None:
        self.hits = hits
        self.units: list[Unit] = []
        self.hit_of: list[int] = []  # the hit each unit belongs to
        self.docs: list[list[str]] = []
        self.counts: list[dict[str, int]] = []
        for hit, h in enumerate(hits):
            content = h.row.get("content") or ""
            cut = UNITS.get(h.id, int(h.row.get("revision") or 0), content)
            self.units.extend(cut.units)  # shared with the cache: never changed
            self.hit_of.extend([hit] * len(cut.units))
            self.docs.extend(cut.terms)
            self.counts.extend(cut.counts)
        lengths = np.array([len(d) for d in self.docs], dtype=np.float64)
        self.norm = K1 * (1 - B + B * lengths / (lengths.mean() if len(lengths) else 1.0))
        top = max((h.score for h in hits), default=0.0) or 1.0
        of = np.asarray(self.hit_of, np.int64)
        self.episode = np.array([h.score / top for h in hits])[of] if hits else np.zeros(0)
        self.starts = np.array([u.start for u in self.units], np.int64)
        self.ends = np.array([u.end for u in self.units], np.int64)
        matched = np.array([h.passage or (-1, -1) for h in hits], np.int64).reshape(-1, 2)[of]
        self.matched = ((self.starts < matched[:, 1]) & (matched[:, 0] < self.ends)) * 1.0
        self.qvec = next((h.query_vector for h in hits if h.query_vector is not None), None)
        self.blocks = self._passages(chunks, model)

    def _passages(
        self, chunks: dict[str, dict[str, Any] | None], model: str
    ) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
        """Per hit with usable stored vectors: its units' range in the pool, which of its
        passages overlap each unit (units x passages), and those passages' vectors."""
        if self.qvec is None:
            return []
        dim = int(np.asarray(self.qvec).shape[0])
        out = []
        at = 0
        for hit, h in enumerate(self.hits):
            first = at
            while at < len(self.units) and self.hit_of[at] == hit:
                at += 1
            row = chunks.get(h.id)
            if row is None or row.get("model") != model or first == at:
                continue
            emb = Embedded.from_row(row, dim)
            n = len(emb.vectors)
            length = len(h.row.get("content") or "")
            starts = np.asarray(emb.starts[:n], np.int64)
            ends = np.asarray(emb.ends[:n], np.int64)
            usable = (starts != HEADER) & (starts >= 0) & (starts < ends) & (ends <= length)
            if not usable.any():
                continue
            u_start, u_end = self.starts[first:at], self.ends[first:at]
            overlap = (
                (u_start[:, None] < ends[None, :])
                & (starts[None, :] < u_end[:, None])
                & usable[None, :]
            )
            out.append((first, at, overlap, emb.vectors))
        return out

    def words(self, query: list[str]) -> np.ndarray:
        """BM25 of each unit over the query's total idf among the units (0..1)."""
        n = len(self.docs)
        if not n or not query:
            return np.zeros(n)
        idf = _idf(self.counts, query)
        total = float(idf.sum()) * (K1 + 1)
        if total <= 0:
            return np.zeros(n)
        tf = np.array([[c.get(t, 0) for t in query] for c in self.counts], dtype=np.float64)
        return (idf * tf * (K1 + 1) / (tf + self.norm[:, None])).sum(axis=1) / total

    def cosines(self, qvec: np.ndarray) -> np.ndarray:
        """Per unit, the best cosine of the passages overlapping it (-1: none embedded)."""
        best = np.full(len(self.units), -1.0)
        q = np.asarray(qvec, np.float32)
        for first, end, overlap, vectors in self.blocks:
            cos = vectors @ q
            best[first:end] = np.where(overlap, cos[None, :], -1.0).max(axis=1)
        return best
