"""Episodes in the lake: the Parquet schema, the row a tool writes from its arguments, the
public view of a row, and time-range listing (docs/decisions/1145).

A stored row that cannot be shown (written by an older version, or damaged) never fails a read
for the whole tenant: readers build views through view_or_skip, which skips such a row, logs
its id and counts it (metric BadRowsSkipped, memlake.observability.count).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, ValidationInfo, field_validator, model_validator

from memlake.errors import NotFound
from memlake.lake.schema import SYSTEM_FIELDS, TS, TableSpec
from memlake.lake.snapshot import Snapshot
from memlake.models import PREVIEW_CHARS, Input, Output, check_metadata, check_span, time_field
from memlake.observability import count
from memlake.timeutil import iso

TABLE = "episodes"
BAD_ROW_METRIC = "BadRowsSkipped"
log = logging.getLogger(__name__)
V = TypeVar("V")


def _schema(_dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("content", pa.string()),
            pa.field("summary", pa.string()),
            pa.field("title", pa.string()),
            pa.field("context", pa.string()),
            pa.field("metadata", pa.string()),  # JSON object text
            pa.field("entity_ids", pa.list_(pa.string())),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("created_at", TS),
            pa.field("updated_at", TS),
            pa.field("started_at", TS),
            pa.field("ended_at", TS),
            # ADR-007 episode model (memory layers; docs/decisions/0501-0503)
            pa.field("timezone", pa.string()),
            pa.field("platform", pa.string()),
            pa.field("client", pa.string()),
            pa.field("model", pa.string()),
            pa.field("voice_mode", pa.bool_()),
            pa.field("input_modalities", pa.list_(pa.string())),
            pa.field("output_modalities", pa.list_(pa.string())),
            pa.field("qualities", pa.string()),  # JSON object text
            pa.field("source_thread_id", pa.string()),
            pa.field("revision", pa.int64()),  # 1 for the first version, +1 per upsert
            pa.field("previous_version", pa.int64()),  # manifest version of the prior revision
            *SYSTEM_FIELDS,
        ]
    )


TABLE_SPEC = TableSpec(TABLE, _schema, ("created_at", "started_at", "context"))
#: columns older releases had and this one no longer has: segments that still carry them read
#: without them (lake.schema.conform), and import drops them (decision 1146)
RETIRED_COLUMNS = frozenset({"embedding"})
#: tool argument -> column, where the names differ (upsert_episode speaks ADR-007)
ARGUMENT_COLUMNS = {"events": "content", "source_title": "title"}
JSON_COLUMNS = frozenset({"metadata", "qualities"})  # JSON object text
TIME_COLUMNS = frozenset({"started_at", "ended_at"})


def to_columns(arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's episode arguments as column values: renamed (events -> content), JSON objects as
    text (an empty one as null), ISO 8601 times parsed. add_episode and upsert_episode write
    what this returns."""
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        column = ARGUMENT_COLUMNS.get(key, key)
        if column in JSON_COLUMNS:
            value = json.dumps(value, ensure_ascii=False) if value else None
        elif column in TIME_COLUMNS and isinstance(value, str):
            value = time_field(value, column)
        out[column] = value
    return out


class EpisodeInput(Input):
    """The checks add_episode's and upsert_episode's inputs share, for the fields each has: the
    text (content, events) not blank, the JSON objects (metadata, qualities) within limits,
    started_at not after ended_at."""

    @field_validator("content", "events", check_fields=False)
    @classmethod
    def _not_blank(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not value.strip():
            raise ValueError(BLANK[str(info.field_name)])
        return value

    @field_validator("metadata", "qualities", check_fields=False)
    @classmethod
    def _json_object(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_metadata(value)

    @model_validator(mode="after")
    def _times(self) -> EpisodeInput:
        check_span(getattr(self, "started_at", None), getattr(self, "ended_at", None))
        return self


BLANK = {
    "content": "content is empty; pass the episode's text",
    "events": "events is empty; pass the markdown narration",
}


def not_found(episode_id: str) -> NotFound:
    return NotFound(
        f"episode {episode_id} not found",
        hint="Check the id, or use list_episodes / search_episodes to find episodes.",
    )


def unreadable(episode_id: str) -> NotFound:
    return NotFound(
        f"episode {episode_id} is stored in a form this server cannot read, so it is skipped",
        hint="delete_episode removes it; other episodes are not affected.",
    )


def skipped(episode_id: object, problem: object) -> None:
    """Log and count a row a read leaves out."""
    log.warning("skipped unreadable episode row %r: %.300s", episode_id, problem)
    count(BAD_ROW_METRIC)


def view_or_skip(row: dict[str, Any], build: Callable[[dict[str, Any]], V]) -> V | None:
    """build(row), or None (logged and counted) when the stored row cannot be shown."""
    try:
        return build(row)
    except (ValueError, TypeError, KeyError, AttributeError) as e:  # pydantic's errors too
        skipped(row.get("id"), e)
        return None


def public_view(row: dict[str, Any], *, full_content: bool = True) -> dict[str, Any]:
    """The episode as tools return it (JSON-ready)."""
    content = row.get("content") or ""
    truncated = not full_content and len(content) > PREVIEW_CHARS
    return {
        "id": row["id"],
        "content": content[:PREVIEW_CHARS] + "…" if truncated else content,
        "content_truncated": truncated,
        "summary": row.get("summary"),
        "context": row.get("context"),
        "metadata": json.loads(row["metadata"]) if row.get("metadata") else {},
        "entity_ids": list(row.get("entity_ids") or []),
        "created_at": iso(row.get("created_at")),
        "started_at": iso(row.get("started_at")),
        "ended_at": iso(row.get("ended_at")),
        **layer_view(row),
    }


def layer_view(row: dict[str, Any]) -> dict[str, Any]:
    """The ADR-007 fields of an episode (memory layers); EpisodeFields is their output model."""
    return {
        "title": row.get("title"),
        "tags": list(row.get("tags") or []),
        "updated_at": iso(row.get("updated_at")),
        "timezone": row.get("timezone"),
        "platform": row.get("platform"),
        "client": row.get("client"),
        "model": row.get("model"),
        "voice_mode": row.get("voice_mode"),
        "input_modalities": list(row.get("input_modalities") or []),
        "output_modalities": list(row.get("output_modalities") or []),
        "qualities": json.loads(row["qualities"]) if row.get("qualities") else {},
        "source_thread_id": row.get("source_thread_id"),
        "revision": row.get("revision") or 1,
    }


class EpisodeFields(Output):
    """An episode as tools return it (public_view's keys); tool outputs extend it."""

    id: str
    content: str = Field(description="The content (cut to 500 characters where noted)")
    content_truncated: bool = Field(False, description="True when content was cut")
    summary: str | None = None
    context: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    entity_ids: list[str] = Field(default_factory=list)
    created_at: str
    started_at: str | None = None
    ended_at: str | None = None
    title: str | None = Field(None, description="Human-readable title (ADR-007 source_title)")
    tags: list[str] = Field(default_factory=list)
    updated_at: str | None = None
    timezone: str | None = None
    platform: str | None = Field(None, description="Where it happened, e.g. 'claude'")
    client: str | None = None
    model: str | None = None
    voice_mode: bool | None = None
    input_modalities: list[str] = Field(default_factory=list)
    output_modalities: list[str] = Field(default_factory=list)
    qualities: dict[str, Any] = Field(default_factory=dict)
    source_thread_id: str | None = Field(None, description="The thread it was derived from")
    revision: int = Field(description="1 when created, +1 per upsert_episode update")


VectorsPending = Annotated[
    int,
    Field(
        ge=0,
        description="Passages of the content not embedded for meaning search yet (0: all are);"
        " long content is embedded in the background within minutes, and keyword search covers"
        " all of it at once",
    ),
]


def occurred_bounds(table: pa.Table) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """When each episode happened: [started_at or created_at, ended_at or that start]."""
    start = pc.coalesce(table.column("started_at"), table.column("created_at"))
    end = pc.coalesce(table.column("ended_at"), start)
    return start, end


def time_mask(
    table: pa.Table, start: datetime | None, end: datetime | None
) -> pa.ChunkedArray | None:
    """Episodes whose time span overlaps [start, end] (either bound optional)."""
    if start is None and end is None:
        return None
    first, last = occurred_bounds(table)
    mask = None
    if start is not None:
        mask = pc.greater_equal(last, pa.scalar(start, first.type))
    if end is not None:
        upper = pc.less_equal(first, pa.scalar(end, first.type))
        mask = upper if mask is None else pc.and_(mask, upper)
    return mask


def filtered(
    snap: Snapshot,
    *,
    context: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> pa.Table:
    """The live episodes of the readable segments, filtered; the listing tools note what a
    damaged segment left out (memlake.lake.partial)."""
    table = snap.table(TABLE).live_table(partial=True)
    no_time = pc.is_null(table.column("created_at"))
    if pc.any(no_time).as_py():  # cannot be placed in time (nor shown): skip before paging
        for episode_id in table.filter(no_time).column("id").to_pylist():
            skipped(episode_id, "created_at is missing")
        table = table.filter(pc.invert(no_time))
    if context is not None:
        table = table.filter(pc.equal(table.column("context"), context))
    mask = time_mask(table, start, end)
    if mask is not None:
        table = table.filter(mask)
    return table
