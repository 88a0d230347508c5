"""A run as a timeline: each step's time queued, running and waiting for a person, from its
events, on one axis from the approval to the end (or to now, while it runs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from planner_ui.core import dag
from planner_ui.core.events import EventType
from planner_ui.models import Run

# What starts a segment of each kind; anything else a step does ends the open one.
_OPENS = {
    EventType.STEP_QUEUED: "queued",
    EventType.STEP_STARTED: "running",
    EventType.STEP_WAITING: "waiting",
}
_ENDS = {EventType.STEP_SUCCEEDED, EventType.STEP_FAILED, EventType.STEP_SKIPPED}


@dataclass
class Segment:
    kind: str  # queued, running or waiting
    start: datetime
    end: datetime | None  # None: going on now
    left_pct: float = 0.0
    width_pct: float = 0.0


@dataclass
class Row:
    step_id: str
    title: str
    status: str
    critical: bool = False
    segments: list[Segment] = field(default_factory=list)


@dataclass
class Timeline:
    start: datetime | None
    end: datetime
    rows: list[Row]

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds() if self.start else 0.0


def run_timeline(run: Run) -> Timeline:
    steps = list(run.steps.all())
    rows = {s.step_id: Row(s.step_id, s.title, s.status) for s in steps}
    events = run.events.filter(type__in=[*_OPENS, *_ENDS], step_id__in=list(rows)).values_list(
        "step_id", "type", "created_at"
    )
    for step_id, kind, at in events.order_by("seq"):
        row = rows[step_id]
        if row.segments and row.segments[-1].end is None:
            row.segments[-1].end = at
        if kind in _OPENS:
            row.segments.append(Segment(_OPENS[kind], at, None))
    start = run.started_at or min(
        (row.segments[0].start for row in rows.values() if row.segments), default=None
    )
    end = run.finished_at or timezone.now()
    total = (end - start).total_seconds() if start else 0.0
    for row in rows.values():
        for segment in row.segments:
            stop = segment.end or end
            if total > 0:
                segment.left_pct = round(100 * (segment.start - start).total_seconds() / total, 2)
                width = 100 * (stop - segment.start).total_seconds() / total
                segment.width_pct = round(max(width, 0.3), 2)  # a short one stays visible
    # The chain of steps that set the run's length, by how long each really took.
    durations = {
        s.step_id: (s.finished_at - s.started_at).total_seconds()
        if s.started_at and s.finished_at
        else 0.0
        for s in steps
    }
    deps = {s.step_id: [d for d in s.depends_on if d in rows] for s in steps}
    if any(durations.values()):
        for step_id in dag.critical_path(deps, durations):
            rows[step_id].critical = True
    return Timeline(start, end, [rows[s.step_id] for s in steps])
