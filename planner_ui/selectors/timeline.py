"""A run in time: its active time and gaps (core.timing) from the event log and model calls, and
the Gantt chart of its steps on an axis of active time, with the graph's critical path."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from planner_ui.core import timing as core_timing
from planner_ui.core.events import EventType
from planner_ui.core.timing import Gap, Scale, Segment, Span, Tick, Timing
from planner_ui.models import ModelCall, Run, RunEvent, Step
from planner_ui.template_rows import TemplateRow

from .estimate import critical_step_ids

_STEPS = {*core_timing.SEGMENT_OPENED_BY, *core_timing.STEP_ENDED_BY}
# Besides the steps' states, the run's own moments: planning ends with the first plan version,
# which waits for its approval; a pause holds the run until it resumes.
_EVENTS = [
    *_STEPS,
    EventType.PLAN_VERSION,
    EventType.PLAN_APPROVED,
    EventType.RUN_PAUSED,
    EventType.RUN_RESUMED,
]


def run_timing(run: Run, now: datetime | None = None) -> Timing:
    """The run's active time and gaps; see core.timing."""
    return runs_timing([run], now)[run.pk]


def runs_timing(runs: Sequence[Run], now: datetime | None = None) -> dict[int, Timing]:
    """Each run's timing by id, in two queries whatever the number of runs (a page of the
    history)."""
    return {pk: found[0] for pk, found in _read(runs, now or timezone.now()).items()}


_Found = tuple[Timing, Span | None, dict[str, list[Segment]]]


def _read(runs: Sequence[Run], now: datetime) -> dict[int, _Found]:
    """Each run's timing, the span its planner wrote the first plan in (if it has) and its
    steps' segments, from its events and model calls."""
    events: dict[int, list[tuple[str, str, datetime]]] = {run.pk: [] for run in runs}
    calls: dict[int, list[Span]] = {run.pk: [] for run in runs}
    rows = RunEvent.objects.filter(run__in=list(events), type__in=_EVENTS).order_by("run", "seq")
    for run_id, step_id, kind, at in rows.values_list("run_id", "step_id", "type", "created_at"):
        events[run_id].append((step_id, kind, at))
    made = ModelCall.objects.filter(run__in=list(events)).order_by()
    for run_id, ended, ms in made.values_list("run_id", "created_at", "latency_ms"):
        calls[run_id].append(core_timing.span_ending(ended, ms / 1000))
    return {run.pk: _timing(run, events[run.pk], calls[run.pk], now) for run in runs}


def _timing(
    run: Run, events: list[tuple[str, str, datetime]], calls: list[Span], now: datetime
) -> _Found:
    steps = [(step_id, kind, at) for step_id, kind, at in events if step_id and kind in _STEPS]
    segments = core_timing.step_segments(steps, now)
    work: list[Span] = [*calls]
    holds: list[Gap] = []
    for rows in segments.values():
        for segment in rows:
            if segment.kind == "waiting":
                holds.append(Gap(segment.start, segment.end, core_timing.WAITING))
            else:
                work.append(segment)
    planning = first_version = approved = paused = None
    for _, kind, at in events:
        if kind == EventType.PLAN_VERSION and first_version is None:
            first_version = at
            planning = Span(run.created_at, at)  # retries of an invalid plan too
            work.append(planning)
        elif kind == EventType.PLAN_APPROVED and approved is None and first_version:
            approved = at
            holds.append(Gap(first_version, at, core_timing.WAITING))
        elif kind == EventType.RUN_PAUSED and paused is None:
            paused = at
        elif kind == EventType.RUN_RESUMED and paused is not None:
            holds.append(Gap(paused, at, core_timing.PAUSED))
            paused = None
    if first_version and approved is None and not run.is_finished:
        holds.append(Gap(first_version, now, core_timing.WAITING))
    if paused is not None and not run.is_finished:
        holds.append(Gap(paused, now, core_timing.PAUSED))
    return core_timing.run_timing(work, holds), planning, segments


@dataclass
class Bar(TemplateRow):
    kind: str  # queued, running or waiting
    ended_by: str  # see core.timing.Segment
    start: datetime
    end: datetime | None  # None: going on now
    seconds: float
    left_pct: float
    width_pct: float

    @property
    def outcome(self) -> str:
        """How the step ended here, when it did: "succeeded", "failed" or "skipped"."""
        return self.ended_by if self.ended_by in core_timing.STEP_ENDED_BY.values() else ""


@dataclass
class Row(TemplateRow):
    step_id: str
    title: str
    status: str
    critical: bool = False
    segments: list[Bar] = field(default_factory=list)


@dataclass
class GapBand(TemplateRow):
    reason: str
    start: datetime
    seconds: float
    left_pct: float
    width_pct: float


@dataclass
class Timeline:
    timing: Timing
    rows: list[Row]
    ticks: list[Tick] = field(default_factory=list)
    gaps: list[GapBand] = field(default_factory=list)
    critical_path: list[str] = field(default_factory=list)
    planning: Row | None = None

    @property
    def start(self) -> datetime | None:
        return self.timing.start

    @property
    def end(self) -> datetime | None:
        return self.timing.end

    @property
    def seconds(self) -> float:
        return self.timing.active_s


def run_timeline(run: Run, steps: Sequence[Step] | None = None) -> Timeline:
    """The Gantt chart: a row per step, its queued / running / waiting bars on an axis of
    active time (gaps cut to narrow bands), critical steps as the graph marks them. `steps`
    are all the run's, for a caller that has read them already."""
    steps = list(run.steps.all()) if steps is None else steps
    timing, planning, segments = _read([run], timezone.now())[run.pk]
    scale = Scale(timing)
    path = critical_step_ids(steps)
    on_path = set(path)
    rows = [Row(s.step_id, s.title, s.status, s.step_id in on_path) for s in steps]
    for row in rows:
        row.segments = _bars(segments.get(row.step_id, []), scale)
    planning_row = None
    if planning is not None:
        # Not a step, but active time: the row that explains the axis's first stretch.
        planning_row = Row("", "The planner writes the plan", "succeeded")
        planning_row.segments = _bars(
            [Segment(planning.start, planning.end, "running", "succeeded")], scale
        )
    bands = [
        GapBand(gap.reason, gap.start, gap.seconds, scale.pct(gap.start), scale.width_pct(gap))
        for gap in timing.gaps
    ]
    return Timeline(timing, rows, scale.ticks(), bands, path, planning_row)


def _bars(segments: list[Segment], scale: Scale) -> list[Bar]:
    return [
        Bar(
            kind=segment.kind,
            ended_by=segment.ended_by,
            start=segment.start,
            end=segment.end if segment.ended_by else None,
            seconds=segment.seconds,
            left_pct=scale.pct(segment.start),
            width_pct=scale.width_pct(segment),
        )
        for segment in segments
    ]
