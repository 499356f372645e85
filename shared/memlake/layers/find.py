"""find_episodes' filters: platform, tags (all of them), thread, concept, context and time.

The listing is newest first by when an episode happened, with a keyset cursor; a query goes to
hybrid search with the filtered ids as its allow-list (memlake.search.hybrid).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memlake.cursors import Pager
from memlake.episodes import filtered, occurred_bounds
from memlake.lake.snapshot import Snapshot
from memlake.layers.tables import LINKS


def has_all(column: pa.ChunkedArray, wanted: list[str]) -> pa.Array:
    """Rows of a list<string> column that contain every value of `wanted`."""
    lists = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    keep = np.ones(len(lists), dtype=bool)
    flat, parents = pc.list_flatten(lists), pc.list_parent_indices(lists)
    for value in wanted:
        hit = np.zeros(len(lists), dtype=bool)
        hit[pc.filter(parents, pc.equal(flat, value)).to_numpy()] = True
        keep &= hit
    return pa.array(keep)


def filter_episodes(
    snap: Snapshot,
    *,
    context: str | None,
    start: datetime | None,
    end: datetime | None,
    platform: str | None,
    tags: list[str],
    thread_id: str | None,
    concept_id: str | None,
) -> pa.Table:
    table = filtered(snap, context=context, start=start, end=end)
    if platform is not None:
        table = table.filter(pc.fill_null(pc.equal(table.column("platform"), platform), False))
    if thread_id is not None:
        mask = pc.equal(table.column("source_thread_id"), thread_id)
        table = table.filter(pc.fill_null(mask, False))
    if tags:
        table = table.filter(has_all(table.column("tags"), tags))
    if concept_id is not None:
        linked = [lk["episode_id"] for lk in snap.where(LINKS, "concept_id", [concept_id])]
        table = table.filter(pc.is_in(table.column("id"), value_set=pa.array(linked, pa.string())))
    return table


def newest_first(
    table: pa.Table, *, limit: int, cursor: str | None, pager: Pager
) -> tuple[list[dict[str, Any]], str | None]:
    at, _ = occurred_bounds(table)
    table = table.append_column("__at", pc.cast(at, pa.int64()))
    if cursor:
        at_us, last_id = pager.decode(cursor)
        before = pc.or_(
            pc.less(table.column("__at"), at_us),
            pc.and_(pc.equal(table.column("__at"), at_us), pc.less(table.column("id"), last_id)),
        )
        table = table.filter(before)
    table = table.sort_by([("__at", "descending"), ("id", "descending")])
    page = table.slice(0, limit + 1).to_pylist()
    more = len(page) > limit
    page = page[:limit]
    next_cursor = pager.encode([page[-1]["__at"], page[-1]["id"]]) if more else None
    return page, next_cursor
