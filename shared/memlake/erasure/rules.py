"""Which rows of which table hold an erased target, and what becomes of them.

A row holds an episode when it is one of its versions (episodes, its passages' vectors, its
vector backlog entry) or points at it (concept links, relationships, the audit of those
relationships, the idempotency record whose stored result is it); a thread, when it is the
thread or one of its messages, or the idempotency record of its add_thread. Only versions
written at or before the delete (`requested_seq`) are erased: the same id stored again after
it is a new record. Tombstones hold an id and nothing else: they stay (they keep what was
deleted deleted in every older segment a reader might still hold).

Rows are dropped, except the audit's: an audit row of a relationship keeps who did what to
which ids, and loses its details (a relationship's metadata is the caller's text).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from memlake import audit, episodes, idempotency
from memlake.layers import tables as layers
from memlake.relationships.table import TABLE as RELATIONSHIPS
from memlake.search.index.backlog import BACKLOG_TABLE
from memlake.search.index.chunks import CHUNKS_TABLE

SCRUBBED_DETAILS = '{"erased":true}'


@dataclass(frozen=True)
class Targets:
    """What one pass erases: id -> the newest commit version erased, by kind."""

    episodes: dict[str, int] = field(default_factory=dict)
    threads: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.episodes or self.threads)

    def all_ids(self) -> dict[str, int]:
        return {**self.threads, **self.episodes}


#: the ids of one kind a column may name
Pick = Callable[[Targets], dict[str, int]]


def _episodes(t: Targets) -> dict[str, int]:
    return t.episodes


def _threads(t: Targets) -> dict[str, int]:
    return t.threads


def _any(t: Targets) -> dict[str, int]:
    return t.all_ids()


@dataclass(frozen=True)
class Rule:
    #: (column, which targets it may name)
    columns: tuple[tuple[str, Pick], ...]
    #: True: rows are kept with their details scrubbed (the audit); False: dropped
    scrub: bool = False
    #: the column holds a JSON result whose "id" names the target (idempotency records)
    json_id: bool = False


RULES: dict[str, Rule] = {
    episodes.TABLE: Rule((("id", _episodes),)),
    CHUNKS_TABLE: Rule((("id", _episodes),)),
    BACKLOG_TABLE: Rule((("id", _episodes),)),
    layers.LINKS: Rule((("episode_id", _episodes),)),
    RELATIONSHIPS: Rule((("from_id", _episodes), ("to_id", _episodes))),
    audit.TABLE: Rule((("from_id", _episodes), ("to_id", _episodes)), scrub=True),
    idempotency.TABLE: Rule((("result", _any),), json_id=True),
    layers.THREADS: Rule((("id", _threads),)),
    layers.MESSAGES: Rule((("thread_id", _threads),)),
}


def row_seqs(table: pa.Table, segment_seq: int) -> pa.Array:
    """Each row's commit version (a fresh segment's rows take the segment's)."""
    return pc.fill_null(table.column("_seq"), pa.scalar(segment_seq, pa.int64()))


def _named(values: list[str | None], rule: Rule) -> list[str | None]:
    if not rule.json_id:
        return values
    out: list[str | None] = []
    for v in values:
        try:
            named = json.loads(v).get("id") if v else None
        except (ValueError, AttributeError):
            named = None
        out.append(named if isinstance(named, str) else None)
    return out


def matches(table: pa.Table, segment_seq: int, rule: Rule, targets: Targets) -> list[int]:
    """Rows of one segment that hold a target (live rows only: tombstones hold just an id)."""
    if table.num_rows == 0:
        return []
    seqs: list[int] | None = None
    deleted = table.column("_deleted")
    hits: set[int] = set()
    for column, pick in rule.columns:
        ids = pick(targets)
        if not ids or column not in table.column_names:
            continue
        col = table.column(column)
        if rule.json_id:  # a JSON text: rows that mention an id (one pass), then parsed
            mention = "|".join(re.escape(f'"{i}"') for i in ids)
            found = pc.indices_nonzero(
                pc.fill_null(pc.match_substring_regex(col, mention), False)
            ).to_pylist()
        else:
            found = pc.indices_nonzero(
                pc.fill_null(pc.is_in(col, value_set=pa.array(list(ids), pa.string())), False)
            ).to_pylist()
        if not found:
            continue
        if seqs is None:
            seqs = row_seqs(table, segment_seq).to_pylist()
        names = _named(col.take(found).to_pylist(), rule)
        for row, name in zip(found, names, strict=True):
            if name in ids and seqs[row] <= ids[name] and not deleted[row].as_py():
                hits.add(row)
    if rule.scrub and hits:  # scrubbed already: nothing left to erase
        details = table.column("details")
        hits = {r for r in hits if details[r].as_py() != SCRUBBED_DETAILS}
    return sorted(hits)


def without(table: pa.Table, segment_seq: int, rule: Rule, rows: list[int]) -> pa.Table:
    """The segment's rows with `rows` erased, every row's `_seq` kept (filled in as compaction
    fills it: the rewritten segment keeps the old one's place in the commit order)."""
    at = table.schema.get_field_index("_seq")
    table = table.set_column(at, table.schema.field("_seq"), row_seqs(table, segment_seq))
    if rule.scrub:
        details = table.column("details").to_pylist()
        for row in rows:
            details[row] = SCRUBBED_DETAILS
        i = table.schema.get_field_index("details")
        return table.set_column(i, table.schema.field("details"), pa.array(details, pa.string()))
    keep = sorted(set(range(table.num_rows)) - set(rows))
    return table.take(pa.array(keep, pa.int64()))
