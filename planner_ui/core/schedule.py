"""When a scheduled template runs next: "every 30 seconds", "every 2 hours", or a five-field
cron line ("0 8 * * 1-5": at 08:00 on weekdays), read in UTC.

Pure functions over aware datetimes; services.templates claims each due run in the database,
so Celery beat (restarted, or more than one) never starts one twice."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MIN_INTERVAL_S = 5
_EVERY = re.compile(
    r"^every\s+(\d+)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|d|days?)$", re.I
)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# minute, hour, day of month, month, day of week (0 or 7 = Sunday)
_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day", 1, 31), ("month", 1, 12), ("weekday", 0, 7))


class ScheduleError(ValueError):
    """A schedule a person wrote cannot be read; the message says how to write one."""


@dataclass(frozen=True)
class Schedule:
    text: str
    every_s: int | None = None
    # The allowed values of each cron field, for a cron line.
    cron: tuple[frozenset[int], ...] | None = None
    # Whether day of month and day of week were both restricted (cron then takes either).
    either_day: bool = False

    def next_after(self, after: datetime) -> datetime:
        """The first time strictly after `after` (aware) that the schedule names."""
        if self.every_s is not None:
            return after + timedelta(seconds=self.every_s)
        return _next_cron(self, after)


def parse_schedule(text: str) -> Schedule:
    text = " ".join(text.split())
    if found := _EVERY.match(text):
        seconds = int(found.group(1)) * _UNIT_S[found.group(2)[0].lower()]
        if seconds < MIN_INTERVAL_S:
            raise ScheduleError(f"A schedule runs at most every {MIN_INTERVAL_S} seconds.")
        return Schedule(text=text, every_s=seconds)
    parts = text.split(" ")
    if len(parts) != 5:
        raise ScheduleError(
            'Write "every 30 minutes" (seconds, minutes, hours or days), or a cron line of five '
            'fields: minute hour day-of-month month day-of-week, e.g. "0 8 * * 1-5" (UTC).'
        )
    sets = tuple(
        _field(part, name, low, high)
        for part, (name, low, high) in zip(parts, _FIELDS, strict=True)
    )
    weekdays = frozenset(0 if d == 7 else d for d in sets[4])
    return Schedule(
        text=text,
        cron=(*sets[:4], weekdays),
        either_day=parts[2] != "*" and parts[4] != "*",
    )


def _field(part: str, name: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for item in part.split(","):
        body, _, step_text = item.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if body == "*":
                start, end = low, high
            elif "-" in body:
                first, last = body.split("-", 1)
                start, end = int(first), int(last)
            else:
                start = end = int(body)
        except ValueError:
            raise ScheduleError(f"The {name} field {part!r} is not a cron field.") from None
        if step < 1 or start < low or end > high or start > end:
            raise ScheduleError(f"The {name} field {part!r} must stay within {low}-{high}.")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def _next_cron(schedule: Schedule, after: datetime) -> datetime:
    assert schedule.cron is not None
    minutes, hours, days, months, weekdays = schedule.cron
    moment = after.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
    # Minute by minute would be slow; skip whole days and hours that cannot match. Four years
    # cover every calendar (29 February included).
    limit = moment + timedelta(days=366 * 4)
    while moment < limit:
        day_ok = _day_matches(schedule, moment, days, weekdays)
        if moment.month not in months or not day_ok:
            moment = (moment + timedelta(days=1)).replace(hour=0, minute=0)
            continue
        if moment.hour not in hours:
            moment = (moment + timedelta(hours=1)).replace(minute=0)
            continue
        if moment.minute in minutes:
            return moment
        moment += timedelta(minutes=1)
    raise ScheduleError(f"The schedule {schedule.text!r} never runs.")


def _day_matches(
    schedule: Schedule, moment: datetime, days: frozenset[int], weekdays: frozenset[int]
) -> bool:
    weekday = (moment.weekday() + 1) % 7  # cron: 0 is Sunday
    if schedule.either_day:
        return moment.day in days or weekday in weekdays
    return moment.day in days and weekday in weekdays
