"""Times at the edges: ISO 8601 (a time without a zone is UTC), and for filters also relative
forms, "7d", "2 weeks ago", "yesterday" (docs/decisions/1215)."""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime, timedelta
from typing import Literal

MIN_TIME = datetime(1970, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(2200, 1, 1, tzinfo=UTC)

Edge = Literal["start", "end"]

#: what time_start / time_end accept, for error messages
FORMS = (
    "ISO 8601 (2026-01-15T09:30:00Z), a duration back from now"
    " (90m, 24h, 7d, 2w, 3 months, '3 days ago') or today, yesterday, now"
)
_UNITS = {
    "m": "minutes",
    "min": "minutes",
    "mins": "minutes",
    "minute": "minutes",
    "minutes": "minutes",
    "h": "hours",
    "hr": "hours",
    "hrs": "hours",
    "hour": "hours",
    "hours": "hours",
    "d": "days",
    "day": "days",
    "days": "days",
    "w": "weeks",
    "wk": "weeks",
    "wks": "weeks",
    "week": "weeks",
    "weeks": "weeks",
    "mo": "months",
    "month": "months",
    "months": "months",
    "y": "years",
    "yr": "years",
    "yrs": "years",
    "year": "years",
    "years": "years",
}
_DURATION = re.compile(r"(\d{1,6})\s*([a-z]+)(?:\s+ago)?")
_DAYS = {"today": 0, "yesterday": 1}


def parse_time(value: str | datetime, *, field: str) -> datetime:
    """An ISO 8601 time (or a datetime) in UTC, between 1970 and 2200."""
    parsed = value if isinstance(value, datetime) else _iso(value)
    if parsed is None:
        raise ValueError(
            f"{field} {str(value)[:60]!r} is not an ISO 8601 time; use e.g. 2026-01-15T09:30:00Z"
        )
    return _in_range(parsed, field)


def parse_when(
    value: str | datetime, *, field: str, edge: Edge, at: datetime | None = None
) -> datetime:
    """A filter bound: ISO 8601 as in parse_time, or relative to `at` (default now):
    "now"; "today" / "yesterday" (UTC days: their first microsecond as a start, their last as
    an end); a duration back ("90m", "24h", "7d", "2 weeks", "3 days ago", "1 month"; months
    and years by the calendar)."""
    if isinstance(value, datetime):
        return parse_time(value, field=field)
    relative = _relative(value)
    if relative is None:
        parsed = _iso(value)
        if parsed is None:
            raise ValueError(f"{field} {value[:60]!r} is not a time; use {FORMS}")
        return _in_range(parsed, field)
    base = (at or now()).astimezone(UTC)
    kind, n = relative
    if kind == "now":
        return base
    if kind in _DAYS:
        day = base.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(_DAYS[kind])
        return day if edge == "start" else day + timedelta(days=1, microseconds=-1)
    try:
        return _in_range(_back(base, n, kind), field)
    except (OverflowError, ValueError):
        raise ValueError(f"{field} {value[:60]!r} is too far back") from None


def relative_form(value: str) -> str | None:
    """A canonical spelling of `value` when it is a relative form ("7d", "1 week" and
    "7 days ago" are all "-604800s"; "2 months" is "-2mo"; names as such), else None."""
    relative = _relative(value)
    if relative is None:
        return None
    kind, n = relative
    if kind in ("months", "years"):
        return f"-{n * (12 if kind == 'years' else 1)}mo"
    if kind in ("now", *_DAYS):
        return kind
    return f"-{int(timedelta(**{kind: n}).total_seconds())}s"


def _relative(value: str) -> tuple[str, int] | None:
    """("now" | "today" | "yesterday", 0) or (unit, count) of a duration; None: not relative."""
    text = " ".join(value.strip().lower().split())
    if text == "now" or text in _DAYS:
        return text, 0
    match = _DURATION.fullmatch(text)
    if match is None or match.group(2) not in _UNITS:
        return None
    return _UNITS[match.group(2)], int(match.group(1))


def _back(base: datetime, n: int, unit: str) -> datetime:
    if unit in ("months", "years"):
        months = n * (12 if unit == "years" else 1)
        index = base.year * 12 + base.month - 1 - months
        year, month = divmod(index, 12)
        day = min(base.day, calendar.monthrange(year, month + 1)[1])
        return base.replace(year=year, month=month + 1, day=day)
    return base - timedelta(**{unit: n})


def _iso(value: str) -> datetime | None:
    text = value.strip()
    if text.endswith(("z", "Z")):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _in_range(parsed: datetime, field: str) -> datetime:
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    parsed = parsed.astimezone(UTC)
    if not MIN_TIME <= parsed < MAX_TIME:
        raise ValueError(f"{field} must be between 1970 and 2200")
    return parsed


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def now() -> datetime:
    return datetime.now(UTC)
