"""How long a run really took: the time something worked on it, apart from the gaps.

A run's wall clock runs on while nothing happens: while it waits for a person to approve its
plan or a tool call, while it is paused, and between its end and a retry a person starts
minutes later. Counting those made a run of 0.4 s of work read "3 min 0 s" and its baseline
ratio 4646. Here the run's activity (each step queued or running, the planner's and other
model calls) is merged into spans; what lies between them is a gap, named for what held the
run: a person's approval, a pause, or nothing at all (idle).

Plain Python on datetimes: the selectors read the stamps from the event log and model calls.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property

from .events import EventType

# Why a run stood still, for a gap.
WAITING = "waiting for approval"
PAUSED = "paused"
IDLE = "idle"

# A stretch with no recorded activity and no person to wait for, shorter than this, is the
# machinery's own time (a task handed to a worker, a commit, the next step dispatched): part
# of the work rather than a gap worth listing. A person's retry takes longer than this.
MIN_IDLE_GAP_S = 2.0


@dataclass(frozen=True)
class Span:
    start: datetime
    end: datetime

    @property
    def seconds(self) -> float:
        return max((self.end - self.start).total_seconds(), 0.0)


@dataclass(frozen=True)
class Gap(Span):
    reason: str  # WAITING, PAUSED or IDLE


@dataclass(frozen=True)
class Segment(Span):
    """A step's time in one state: "queued", "running" or "waiting" (for a person)."""

    kind: str
    # What closed it: "succeeded" / "failed" / "skipped" when the step ended there, another
    # kind when the step moved on, "" when it is going on now (then `end` is the moment asked).
    ended_by: str = ""


@dataclass(frozen=True)
class Timing:
    """The active spans of a run in order, and the gaps between (and after) them."""

    active: tuple[Span, ...] = ()
    gaps: tuple[Gap, ...] = ()

    @property
    def active_s(self) -> float:
        return sum(span.seconds for span in self.active)

    @property
    def start(self) -> datetime | None:
        return self.active[0].start if self.active else None

    @property
    def end(self) -> datetime | None:
        ends = [span.end for span in (*self.active, *self.gaps)]
        return max(ends) if ends else None

    @property
    def elapsed_s(self) -> float:
        start, end = self.start, self.end
        return (end - start).total_seconds() if start and end else 0.0

    def gap_seconds(self, reason: str) -> float:
        return sum(gap.seconds for gap in self.gaps if gap.reason == reason)


def merge(spans: Iterable[Span]) -> list[Span]:
    """The union of `spans`, as disjoint spans in order (touching ones join)."""
    merged: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if span.end < span.start:
            continue
        if merged and span.start <= merged[-1].end:
            if span.end > merged[-1].end:
                merged[-1] = Span(merged[-1].start, span.end)
        else:
            merged.append(Span(span.start, span.end))
    return merged


def run_timing(work: Iterable[Span], holds: Iterable[Gap]) -> Timing:
    """Active time from the spans something worked on the run (`work`), with each gap named by
    the hold that covers most of it (a person's approval, a pause), else idle. Holds past the
    last work (a run waiting for its approval now) are gaps too; a short idle gap is work
    (MIN_IDLE_GAP_S)."""
    holds = list(holds)
    active: list[Span] = []
    gaps: list[Gap] = []
    for span in merge(work):
        if active:
            between = Span(active[-1].end, span.start)
            reason = _reason(between, holds)
            if reason == IDLE and between.seconds < MIN_IDLE_GAP_S:
                active[-1] = Span(active[-1].start, span.end)
                continue
            gaps.append(Gap(between.start, between.end, reason))
        active.append(span)
    if active:
        last = active[-1].end
        after = [h for h in holds if h.end > last]
        if after:
            end = max(h.end for h in after)
            gaps.append(Gap(last, end, _reason(Span(last, end), after)))
    return Timing(tuple(active), tuple(gaps))


def _reason(span: Span, holds: list[Gap]) -> str:
    overlap: dict[str, float] = {}
    for hold in holds:
        seconds = (min(span.end, hold.end) - max(span.start, hold.start)).total_seconds()
        if seconds > 0:
            overlap[hold.reason] = overlap.get(hold.reason, 0.0) + seconds
    return max(overlap, key=overlap.__getitem__) if overlap else IDLE


# --- a step's states, from its events ----------------------------------------------------------

# What starts a segment of each kind; anything else a step does ends the open one.
SEGMENT_OPENED_BY: dict[str, str] = {
    EventType.STEP_QUEUED: "queued",
    EventType.STEP_STARTED: "running",
    EventType.STEP_WAITING: "waiting",
}
STEP_ENDED_BY: dict[str, str] = {
    EventType.STEP_SUCCEEDED: "succeeded",
    EventType.STEP_FAILED: "failed",
    EventType.STEP_SKIPPED: "skipped",
}


def step_segments(
    events: Iterable[tuple[str, str, datetime]], now: datetime
) -> dict[str, list[Segment]]:
    """Each step's segments from its (step_id, event type, time) events in log order; one
    still open ends at `now`."""
    open_: dict[str, tuple[str, datetime]] = {}
    segments: dict[str, list[Segment]] = {}
    for step_id, kind, at in events:
        if kind not in SEGMENT_OPENED_BY and kind not in STEP_ENDED_BY:
            continue
        rows = segments.setdefault(step_id, [])
        if step_id in open_:
            opened, since = open_.pop(step_id)
            ended_by = STEP_ENDED_BY.get(kind) or SEGMENT_OPENED_BY[kind]
            rows.append(Segment(since, at, opened, ended_by))
        if kind in SEGMENT_OPENED_BY:
            open_[step_id] = (SEGMENT_OPENED_BY[kind], at)
    for step_id, (opened, since) in open_.items():
        segments[step_id].append(Segment(since, max(now, since), opened))
    for rows in segments.values():
        rows.sort(key=lambda s: s.start)
    return segments


# --- the Gantt chart's axis --------------------------------------------------------------------

# Each gap is drawn this share of the active time wide, whatever it lasted: a 3-minute wait
# would otherwise squeeze 0.4 s of work into a sliver.
GAP_SHARE = 0.06
_NICE_STEPS = (1, 2, 5)
_MINUTE_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 240, 480, 720)


@dataclass(frozen=True)
class Tick:
    pct: float
    label: str


@dataclass(frozen=True)
class Scale:
    """Positions on a chart of the run whose axis is active time: the active spans at their
    length, each gap cut to a narrow band (GAP_SHARE)."""

    timing: Timing

    # Worked out once a chart: a 1,000-step chart asks for 6,000 positions.
    @cached_property
    def _gap_width(self) -> float:
        return self.timing.active_s * GAP_SHARE or 1.0

    @cached_property
    def _total(self) -> float:
        return self.timing.active_s + self._gap_width * len(self.timing.gaps) or 1.0

    @cached_property
    def _pieces(self) -> list[tuple[Span, float]]:
        """Every active span and gap in order, with its width on the chart."""
        pieces: list[tuple[Span, float]] = [(s, s.seconds) for s in self.timing.active]
        pieces += [(g, self._gap_width) for g in self.timing.gaps]
        return sorted(pieces, key=lambda p: (p[0].start, p[0].end))

    def pct(self, moment: datetime) -> float:
        """Where `moment` falls, in percent of the chart's width."""
        x = 0.0
        for span, width in self._pieces:
            if moment <= span.start:
                break
            if moment < span.end and span.seconds > 0:
                x += width * (moment - span.start).total_seconds() / span.seconds
                break
            x += width
        return round(100 * min(x, self._total) / self._total, 2)

    def width_pct(self, span: Span, minimum: float = 0.3) -> float:
        """A span's width on the chart; a short one keeps `minimum` percent, to stay visible."""
        return round(max(self.pct(span.end) - self.pct(span.start), minimum), 2)

    def ticks(self, most: int = 7) -> list[Tick]:
        """Marks at round amounts of active time, at most `most` + 1 of them from 0."""
        active_s = self.timing.active_s
        if active_s <= 0:
            return []
        step = tick_step(active_s, most)
        count = int(math.floor(active_s / step + 1e-9))
        return [
            Tick(self._pct_of_active(n * step), tick_label(n * step, step))
            for n in range(count + 1)
        ]

    def _pct_of_active(self, seconds: float) -> float:
        """The position of the moment `seconds` of active time into the run."""
        x, left = 0.0, seconds
        for span, width in self._pieces:
            if isinstance(span, Gap):
                if left > 0:
                    x += width
                continue
            if left <= span.seconds:
                x += left
                break
            x, left = x + span.seconds, left - span.seconds
        return round(100 * min(x, self._total) / self._total, 2)


def tick_step(seconds: float, most: int = 7) -> float:
    """The smallest round step that marks `seconds` with at most `most` steps: 1, 2 or 5 times
    a power of ten below a minute, whole minutes from there (1, 2, 5, 10, 15, 30, 60 ...)."""
    exponent = math.floor(math.log10(seconds / most)) if seconds > 0 else 0
    steps = [n * 10.0**e for e in range(exponent, exponent + 3) for n in _NICE_STEPS]
    steps = [s for s in steps if s < 60] + [60.0 * m for m in _MINUTE_STEPS]
    for step in sorted(steps):
        if seconds / step <= most:
            return step
    return 3600.0 * math.ceil(seconds / most / 3600)


def tick_label(seconds: float, step: float) -> str:
    if step < 1:
        decimals = max(0, math.ceil(-math.log10(step) - 1e-9))
        return f"{seconds:.{decimals}f} s"
    if seconds < 60:
        return f"{seconds:g} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min" + (f" {rest} s" if rest else "")


def span_ending(end: datetime, seconds: float) -> Span:
    """The span of something that lasted `seconds` until `end` (a model call is stamped when
    it returns)."""
    return Span(end - timedelta(seconds=seconds), end)
