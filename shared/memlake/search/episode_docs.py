"""The doc an index shard holds for an episode row: its terms, passages and vectors, its
times and context (what the write hook indexes, a repair or a tail rebuild builds again, and a
bulk build lays out: tests/bench/scale_tenant.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memlake.search.index.passages import Embedded
from memlake.search.index.shard import Doc
from memlake.search.index.text import episode_terms, passage_terms
from memlake.timeutil import now


def _us(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return int(value.timestamp() * 1_000_000)
    return int(value)


def episode_doc(episode_id: str, row: dict[str, Any], seq: int, emb: Embedded) -> Doc:
    """The doc a shard indexes for an episode row written in commit `seq` with these passages
    and vectors (also what a bulk build uses: tests/bench/scale_tenant.py)."""
    start = _us(row.get("started_at")) or _us(row.get("created_at")) or _us(now())
    end = _us(row.get("ended_at")) or start
    return Doc(
        id=episode_id,
        seq=seq,
        t_start=int(start or 0),
        t_end=int(end or 0),
        context=row.get("context"),
        terms=episode_terms(row),
        vectors=emb.doc_vectors(),
        passages=passage_terms(row, emb.starts, emb.ends),
        vector_passages=range(len(emb.vectors)) if len(emb.vectors) else (-1,),
    )
