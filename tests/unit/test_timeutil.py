"""Times at the edges: ISO 8601 and the relative forms of time_start / time_end (decision 1215)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from memlake.models import TimeRange
from memlake.timeutil import parse_time, parse_when, relative_form

AT = datetime(2026, 3, 31, 15, 30, 45, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "back"),
    [
        ("90m", timedelta(minutes=90)),
        ("24h", timedelta(hours=24)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
        ("2 weeks", timedelta(weeks=2)),
        ("3 days ago", timedelta(days=3)),
        ("  3   Days  AGO ", timedelta(days=3)),
        ("1 hour", timedelta(hours=1)),
        ("45 min", timedelta(minutes=45)),
        ("0d", timedelta(0)),
    ],
)
def test_durations_go_back_from_now(text: str, back: timedelta) -> None:
    for edge in ("start", "end"):
        assert parse_when(text, field="time_start", edge=edge, at=AT) == AT - back  # type: ignore[arg-type]


def test_months_and_years_go_back_by_the_calendar() -> None:
    assert parse_when("1 month", field="f", edge="start", at=AT) == AT.replace(month=2, day=28)
    assert parse_when("13 months ago", field="f", edge="start", at=AT) == AT.replace(
        year=2025, month=2, day=28
    )
    assert parse_when("1y", field="f", edge="start", at=AT) == AT.replace(year=2025)
    leap = datetime(2024, 2, 29, tzinfo=UTC)
    assert parse_when("1 year", field="f", edge="start", at=leap) == datetime(
        2023, 2, 28, tzinfo=UTC
    )


def test_days_by_name_are_whole_utc_days() -> None:
    midnight = datetime(2026, 3, 31, tzinfo=UTC)
    last = timedelta(days=1, microseconds=-1)
    assert parse_when("now", field="f", edge="start", at=AT) == AT
    assert parse_when("today", field="f", edge="start", at=AT) == midnight
    assert parse_when("today", field="f", edge="end", at=AT) == midnight + last
    assert parse_when("Yesterday", field="f", edge="start", at=AT) == midnight - timedelta(1)
    assert parse_when("yesterday", field="f", edge="end", at=AT) == midnight - timedelta(1) + last
    other = AT.astimezone(__import__("zoneinfo").ZoneInfo("Asia/Tokyo"))  # UTC days, any zone
    assert parse_when("today", field="f", edge="start", at=other) == midnight


def test_iso_8601_is_unchanged() -> None:
    assert parse_when("2026-01-15T09:30:00Z", field="f", edge="end", at=AT) == datetime(
        2026, 1, 15, 9, 30, tzinfo=UTC
    )
    assert parse_when("2026-01-15", field="f", edge="start") == datetime(2026, 1, 15, tzinfo=UTC)
    assert relative_form("2026-01-15") is None
    assert relative_form(" 2  Weeks ") == relative_form("14d") == relative_form("336 hours ago")
    assert relative_form("1 year") == relative_form("12 months") != relative_form("365d")
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_time("7d", field="started_at")  # episode times stay absolute


@pytest.mark.parametrize(
    "bad", ["7x", "-3d", "yesterday-ish", "3 days later", "d7", "1.5d", "", "next week"]
)
def test_bad_forms_name_the_accepted_ones(bad: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_when(bad, field="time_start", edge="start", at=AT)
    message = str(info.value)
    assert message.startswith("time_start") and repr(bad) in message
    for form in ("ISO 8601", "7d", "2w", "3 days ago", "yesterday", "today", "now"):
        assert form in message, (form, message)


def test_too_far_back_is_refused_not_crashed() -> None:
    with pytest.raises(ValueError, match="too far back"):
        parse_when("999999 years", field="time_start", edge="start", at=AT)
    with pytest.raises(ValueError, match="too far back"):
        parse_when("60y", field="time_start", edge="start", at=AT)  # before 1970


def test_a_time_range_resolves_once_and_binds_cursors_to_the_form() -> None:
    r = TimeRange(time_start="7d", time_end="now")
    start, end = r.bounds()
    assert start is not None and end is not None and end - start == timedelta(days=7)
    assert r.bounds() == (start, end)  # resolved at validation, not again per call
    assert r.cursor_bounds() == ("-604800s", "now")
    fixed = TimeRange(time_start="2026-01-15", time_end="2026-01-16T00:00:00+01:00")
    assert fixed.cursor_bounds() == fixed.bounds()
    assert fixed.bounds()[1] == datetime(2026, 1, 15, 23, tzinfo=UTC)
    y = TimeRange(time_start="yesterday", time_end="yesterday").bounds()
    assert y[0] is not None and y[1] is not None
    assert y[1] - y[0] == timedelta(days=1, microseconds=-1)
    with pytest.raises(ValidationError, match="time_start is after time_end"):
        TimeRange(time_start="today", time_end="2d")
    with pytest.raises(ValidationError, match="time_end"):
        TimeRange(time_end="-3d")
