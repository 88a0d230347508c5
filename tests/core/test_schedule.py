"""Schedules of templates: intervals and cron lines, read in UTC, with exact error texts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from planner_ui.core.schedule import ScheduleError, parse_schedule

T0 = datetime(2026, 11, 27, 8, 30, 15, tzinfo=UTC)  # a Friday


def test_every_interval() -> None:
    assert parse_schedule("every 30 seconds").next_after(T0) == T0 + timedelta(seconds=30)
    assert parse_schedule("Every  2 hours").next_after(T0) == T0 + timedelta(hours=2)
    assert parse_schedule("every 1 day").every_s == 86400
    with pytest.raises(ScheduleError, match="at most every 5 seconds"):
        parse_schedule("every 2 s")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("* * * * *", datetime(2026, 11, 27, 8, 31, tzinfo=UTC)),
        ("*/15 * * * *", datetime(2026, 11, 27, 8, 45, tzinfo=UTC)),
        ("0 8 * * *", datetime(2026, 11, 28, 8, 0, tzinfo=UTC)),
        ("0 8 * * 1-5", datetime(2026, 11, 30, 8, 0, tzinfo=UTC)),  # Monday
        ("0 9 1 * *", datetime(2026, 12, 1, 9, 0, tzinfo=UTC)),
        ("0 0 29 2 *", datetime(2028, 2, 29, 0, 0, tzinfo=UTC)),
        ("30 8 * * 0,7", datetime(2026, 11, 29, 8, 30, tzinfo=UTC)),  # Sunday
        # Day of month and day of week both given: either matches, as in cron.
        ("0 12 1 * 6", datetime(2026, 11, 28, 12, 0, tzinfo=UTC)),
    ],
)
def test_cron_lines(line: str, expected: datetime) -> None:
    assert parse_schedule(line).next_after(T0) == expected


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("now and then", 'Write "every 30 minutes"'),
        ("61 * * * *", "The minute field '61' must stay within 0-59."),
        ("* * * * mon", "The weekday field 'mon' is not a cron field."),
        ("*/0 * * * *", "The minute field '*/0' must stay within 0-59."),
    ],
)
def test_what_cannot_be_read_says_why(line: str, why: str) -> None:
    with pytest.raises(ScheduleError) as exc:
        parse_schedule(line)
    assert str(exc.value).startswith(why)


def test_a_date_that_never_comes_is_refused() -> None:
    with pytest.raises(ScheduleError, match="never runs"):
        parse_schedule("0 0 31 2 *").next_after(T0)
