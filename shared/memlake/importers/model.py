"""What every chat format is turned into: one conversation with its messages, or a problem.

Format modules know their exports; the pipeline knows only these values, so a new format is one
module that yields them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memlake.layers.fields import MAX_TITLE_CHARS

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Message:
    role: str  # user | assistant | system | tool (memlake.layers.fields.Role)
    text: str
    at: datetime | None = None


@dataclass(frozen=True)
class Conversation:
    """One conversation of an export. `source` + `source_id` is its identity across exports
    (the pipeline derives the thread and episode ids from it)."""

    source: str  # the episode's platform: chatgpt | claude | claude_code
    source_id: str
    title: str | None
    messages: tuple[Message, ...]
    created_at: datetime | None = None
    updated_at: datetime | None = None
    context: str | None = None
    client: str | None = None
    model: str | None = None
    voice_mode: bool | None = None
    input_modalities: tuple[str, ...] = ()
    output_modalities: tuple[str, ...] = ()
    #: what the export says beyond the columns (e.g. other branches, a project), kept in the
    #: episode's metadata under "import"
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Problem:
    """Something that could not be read: `where` names the file (and item), `reason` says why."""

    where: str
    reason: str


def obj(value: object) -> dict[str, Any]:
    """The value when it is a JSON object, else an empty one (exports leave fields out)."""
    return value if isinstance(value, dict) else {}


def clean_text(value: object) -> str:
    """Text that Parquet and the search can hold: a lone surrogate (JSON may escape one) becomes
    U+FFFD instead of failing the whole batch's commit."""
    text = value if isinstance(value, str) else ""
    try:
        text.encode()
    except UnicodeEncodeError:
        text = _SURROGATE.sub("\ufffd", text)
    return text.replace("\x00", "")


def clean_title(value: object) -> str | None:
    """A one-line title within the episode's limit, or None for a blank one."""
    text = _CONTROL.sub(" ", clean_text(value)).strip()
    return text[:MAX_TITLE_CHARS].strip() or None


def epoch_time(value: object) -> datetime | None:
    """An epoch-seconds float (ChatGPT's create_time), or None when absent or absurd."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        at = datetime.fromtimestamp(float(value), UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return at if 1990 <= at.year < 2200 else None


def iso_time(value: object) -> datetime | None:
    """An ISO 8601 time (Claude's created_at, Claude Code's timestamp), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    return at.astimezone(UTC) if 1990 <= at.year < 2200 else None
