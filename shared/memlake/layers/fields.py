"""Bounded argument types of the memory-layer tools (docs/decisions/0502 lists the limits)."""

from __future__ import annotations

import re
import zoneinfo
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator

from memlake.ids import check_id
from memlake.models import Input, IsoTime
from memlake.timeutil import parse_time

MAX_MESSAGES_PER_CALL = 100
MAX_MESSAGE_BYTES = 64 * 1024
MAX_THREAD_MESSAGES = 10_000
MAX_TITLE_CHARS = 300
MAX_TAGS = 32
MAX_MODALITIES = 8
MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 4_000
MAX_CONCEPT_IDS = 100
MAX_HIERARCHY_DEPTH = 64

_NO_CONTROL = r"^[^\x00-\x1f\x7f]+$"
_OFFSET = re.compile(r"^[+-](0\d|1[0-4]):[0-5]\d\Z")


def _id_check(prefix: str, field: str) -> AfterValidator:
    def check(value: str) -> str:
        try:
            return check_id(value, field=field, prefix=prefix)
        except Exception as e:  # becomes a pydantic error with the same message
            raise ValueError(getattr(e, "message", str(e))) from None

    return AfterValidator(check)


ThreadId = Annotated[
    str,
    Field(min_length=1, max_length=80),
    _id_check("thread", "thread id"),
]
ConceptId = Annotated[
    str,
    Field(min_length=1, max_length=80),
    _id_check("concept", "concept id"),
]


def _strip(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _line(max_chars: int, description: str | None = None) -> Any:
    """Field of one line of text without control characters (surrounding blanks removed)."""
    return Field(min_length=1, max_length=max_chars, pattern=_NO_CONTROL, description=description)


_Strip = BeforeValidator(_strip)
Title = Annotated[str, _Strip, _line(MAX_TITLE_CHARS)]
Tag = Annotated[str, _Strip, _line(64)]
Platform = Annotated[str, _Strip, _line(64, "e.g. claude, chatgpt")]
ClientName = Annotated[str, _Strip, _line(128, "e.g. claude-desktop")]
ModelName = Annotated[str, _Strip, _line(128, "e.g. claude-opus-4")]
ConceptName = Annotated[str, _Strip, _line(MAX_NAME_CHARS, "Concept name, one line")]
ConceptKind = Annotated[str, _Strip, _line(64, "e.g. person, decision; default concept")]
SearchQuery = Annotated[str, _Strip, _line(1_000, "What to find in titles, events and tags")]
ConceptQuery = Annotated[str, _Strip, _line(200, "Case-insensitive")]
Modality = Annotated[
    str,
    _Strip,
    Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$", description="e.g. text, voice, image"),
]


def _timezone(value: str) -> str:
    if _OFFSET.match(value) or value == "UTC":
        return value
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"timezone {value[:40]!r} is not an IANA zone name or UTC offset;"
            " use e.g. 'Europe/Berlin' or '+01:00'"
        ) from None
    return value


Timezone = Annotated[
    str,
    _Strip,
    Field(min_length=1, max_length=64, description="e.g. Europe/Berlin or +01:00"),
    AfterValidator(_timezone),
]

Role = Literal["user", "assistant", "system", "tool"]


class MessageIn(Input):
    role: Role
    content: str = Field(min_length=1)
    at: IsoTime | None = Field(None, description="ISO 8601; default: now")

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("message content is empty; pass the message text")
        size = len(value.encode())
        if size > MAX_MESSAGE_BYTES:
            raise ValueError(
                f"message content is {size:,} bytes; the limit is {MAX_MESSAGE_BYTES:,}."
                " Split it into several messages"
            )
        return value

    @field_validator("at")
    @classmethod
    def _at(cls, value: str | None) -> str | None:
        if value is not None:
            parse_time(value, field="at")
        return value


def unique(values: list[str] | None) -> list[str]:
    return list(dict.fromkeys(values or []))
