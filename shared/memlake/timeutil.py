"""ISO 8601 parsing at the edges: a time without a zone is UTC."""

from __future__ import annotations

from datetime import UTC, datetime

MIN_TIME = datetime(1970, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(2200, 1, 1, tzinfo=UTC)


def parse_time(value: str | datetime, *, field: str) -> datetime:
    if isinstance(value, datetime):
        parsed = value
    else:
        text = value.strip()
        if text.endswith(("z", "Z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(
                f"{field} {value[:60]!r} is not an ISO 8601 time; use e.g. 2026-01-15T09:30:00Z"
            ) from None
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
