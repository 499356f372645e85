"""Pydantic models at the edges: tool inputs and outputs, with every argument bounded."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from memlake.ids import check_id
from memlake.jsonshape import exceeds_depth, lone_surrogate
from memlake.timeutil import Edge, now, parse_time, parse_when, relative_form

MAX_SUMMARY_CHARS = 4_000
MAX_METADATA_BYTES = 16 * 1024
MAX_METADATA_DEPTH = 5
MAX_METADATA_KEY_CHARS = 128
MAX_ENTITY_IDS = 100
CONTEXT_PATTERN = re.compile(r"^[^\x00-\x1f\x7f]{1,128}$")
PREVIEW_CHARS = 500


class Input(BaseModel):
    """Base of tool inputs: unknown arguments are errors. Text is kept exactly as given, and
    must be Unicode: a lone surrogate anywhere (a value, a key, nested) is rejected here, once
    for every tool and every door, before it can reach storage (docs/decisions/1011)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _unicode_only(cls, data: Any) -> Any:
        problem = lone_surrogate(data)
        if problem:
            raise ValueError(problem)
        return data


class Output(BaseModel):
    """Base of tool results, serialised compactly (docs/decisions/1111): a null is never
    sent, and a field with a default is left out when it holds that default or is empty ("",
    [], {}). A field without a default (a search's `episodes`, a count, `created`) is always
    there, so "no results" stays an explicit empty list. Values inside free-form JSON (metadata,
    qualities) are the caller's and are kept as given."""

    model_config = ConfigDict(extra="forbid")

    # no return annotation: pydantic would take it as the serialised type, and -> Any or
    # -> dict would replace every tool's outputSchema with {} or a bare object
    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        data = handler(self)
        if not isinstance(data, dict):
            return data
        fields = type(self).model_fields
        for key in [k for k, v in data.items() if v is None]:
            del data[key]
        for name, info in fields.items():
            if name in data and not info.is_required() and _omittable(data[name], info):
                del data[name]
        return data


class KeepEmpty:
    """Annotated marker: this optional field is sent even when empty (an answer, not an
    attribute), e.g. get_dependency_graph's nodes in json format."""


KEEP_EMPTY = KeepEmpty()

#: a listing's note when damaged storage left rows out (memlake.lake.partial); absent otherwise
Unreadable = Annotated[str | None, Field(description="Set when damaged storage left rows out")]


def _omittable(value: Any, info: Any) -> bool:
    if value in ("", [], {}):
        return not any(isinstance(m, KeepEmpty) for m in info.metadata)
    default = info.get_default(call_default_factory=True)
    return isinstance(default, bool | int | float | str) and value == default


def _episode_id(value: str) -> str:
    try:
        return check_id(value, field="id", prefix="episode")
    except Exception as e:  # becomes a pydantic error with the same message
        raise ValueError(getattr(e, "message", str(e))) from None


def _entity_id(value: str) -> str:
    try:
        return check_id(value, field="entity id", prefix="entity")
    except Exception as e:
        raise ValueError(getattr(e, "message", str(e))) from None


EpisodeId = Annotated[
    str,
    Field(min_length=1, max_length=80),
    AfterValidator(_episode_id),
]
EntityId = Annotated[str, Field(min_length=1, max_length=80), AfterValidator(_entity_id)]
Context = Annotated[
    str,
    BeforeValidator(lambda v: v.strip() if isinstance(v, str) else v),
    Field(
        min_length=1,
        max_length=128,
        pattern=CONTEXT_PATTERN.pattern,
        description="Project, e.g. acme/webapp",
    ),
]
IsoTime = Annotated[
    str,
    Field(max_length=64, description="ISO 8601 time; without a zone it is UTC"),
]


def check_metadata(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    # depth first, without recursion: json.dumps below recurses once per level
    if exceeds_depth(value, MAX_METADATA_DEPTH):
        raise ValueError(f"metadata nests deeper than {MAX_METADATA_DEPTH} levels")
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if len(text.encode()) > MAX_METADATA_BYTES:
        raise ValueError(
            f"metadata is {len(text.encode())} bytes as JSON; the limit is {MAX_METADATA_BYTES}"
        )
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, sub in item.items():
                if len(key) > MAX_METADATA_KEY_CHARS:
                    raise ValueError(f"metadata key {key[:40]!r}... is over 128 characters")
                stack.append(sub)
        elif isinstance(item, list):
            stack.extend(item)
    return value


def time_field(value: str | None, field: str) -> datetime | None:
    return None if value is None else parse_time(value, field=field)


def check_span(started_at: str | None, ended_at: str | None) -> None:
    """An episode's started_at must not be after its ended_at."""
    start, end = time_field(started_at, "started_at"), time_field(ended_at, "ended_at")
    if start and end and start > end:
        raise ValueError("started_at is after ended_at")


class TimeRange(Input):
    """time_start / time_end of a filter: ISO 8601 or relative to now ("7d", "2 weeks ago",
    "yesterday": memlake.timeutil.parse_when), resolved once per call against one clock."""

    time_start: IsoTime | None = Field(None, description="From: ISO 8601, 7d, 2 weeks, yesterday")
    time_end: IsoTime | None = Field(None, description="Until (same forms)")
    _bounds: tuple[datetime | None, datetime | None] = PrivateAttr((None, None))

    @field_validator("time_start", "time_end")
    @classmethod
    def _parse(cls, value: str | None, info: Any) -> str | None:
        if value is not None:
            parse_when(value, field=info.field_name, edge=_EDGES[info.field_name])
        return value

    @model_validator(mode="after")
    def _ordered(self) -> TimeRange:
        at = now()
        self._bounds = (
            _when(self.time_start, "time_start", at),
            _when(self.time_end, "time_end", at),
        )
        start, end = self._bounds
        if start and end and start > end:
            raise ValueError("time_start is after time_end; swap them or widen the range")
        return self

    def bounds(self) -> tuple[datetime | None, datetime | None]:
        """The range in UTC, relative forms resolved when the arguments were validated."""
        return self._bounds

    def cursor_bounds(self) -> tuple[str | datetime | None, str | datetime | None]:
        """The range as a page cursor binds it: an absolute time as its instant, a relative one
        normalised as written, so that a cursor keeps working while "7d" moves on with the clock."""
        start, end = self._bounds
        return _bound_key(self.time_start, start), _bound_key(self.time_end, end)


_EDGES: dict[str, Edge] = {"time_start": "start", "time_end": "end"}


def _when(value: str | None, field: str, at: datetime) -> datetime | None:
    return None if value is None else parse_when(value, field=field, edge=_EDGES[field], at=at)


def _bound_key(value: str | None, resolved: datetime | None) -> str | datetime | None:
    relative = None if value is None else relative_form(value)
    return resolved if relative is None else relative
