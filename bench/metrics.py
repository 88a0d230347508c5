"""The figures of one benchmark run, computed from step timestamps and received WebSocket events.

Plain Python: the scheduler module reads the rows and hands them over as `StepTiming`s.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class StepTiming:
    step_id: str
    depends_on: list[str]
    started_at: float  # epoch seconds
    finished_at: float
    carried: bool = False  # claimed by the process that ran a parent, in the parent's finish


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Linear interpolation between the closest ranks (numpy's default); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary_ms(values_s: Sequence[float]) -> dict[str, float | int | None]:
    """p50, p99 and max of durations given in seconds, in milliseconds."""

    def ms(value: float | None) -> float | None:
        return None if value is None else round(value * 1000, 2)

    return {
        "count": len(values_s),
        "p50_ms": ms(percentile(values_s, 0.5)),
        "p99_ms": ms(percentile(values_s, 0.99)),
        "max_ms": ms(max(values_s, default=None)),
    }


@dataclass
class Dispatch:
    after_parent_s: list[float]  # steps with dependencies, from the last one's end
    after_approval_s: list[float]  # root steps, from the approval
    waited_for_slot: list[str]  # steps left out: every slot was busy when they became ready
    # after_parent_s split: the steps a parent's process carried on to, claimed in the parent's
    # finish (on PostgreSQL in its very statement: 0 by construction), and those that went
    # through the queue. The median of the whole is whichever kind holds the middle step.
    carried_s: list[float] = field(default_factory=list)
    through_queue_s: list[float] = field(default_factory=list)


def dispatch_latencies(steps: Iterable[StepTiming], approved_at: float, slots: int) -> Dispatch:
    """How long each step waited to start once it could.

    A step with dependencies could start when the last of them finished: one figure per step,
    its started_at minus the latest finished_at of its dependencies. A step during whose wait
    all `slots` were running other steps had to wait for a slot, which is capacity rather than
    dispatch: it is left out and named. Root steps are counted apart, from the approval.
    """
    by_id = {step.step_id: step for step in steps}
    result = Dispatch([], [], [])
    for step in by_id.values():
        if not step.depends_on:
            result.after_approval_s.append(step.started_at - approved_at)
            continue
        ready_at = max(by_id[parent].finished_at for parent in step.depends_on)
        if _busiest(by_id.values(), step, ready_at) >= slots:
            result.waited_for_slot.append(step.step_id)
        else:
            result.after_parent_s.append(step.started_at - ready_at)
            split = result.carried_s if step.carried else result.through_queue_s
            split.append(step.started_at - ready_at)
    return result


def _busiest(steps: Iterable[StepTiming], step: StepTiming, ready_at: float) -> int:
    """The most other steps running at once while `step` was ready but not started."""
    others = [other for other in steps if other is not step]
    moments = [ready_at] + [
        other.started_at for other in others if ready_at < other.started_at < step.started_at
    ]
    return max(
        sum(1 for other in others if other.started_at <= moment < other.finished_at)
        for moment in moments
    )


@dataclass(frozen=True)
class CriticalPath:
    """The chain of steps that set a run's makespan: from the step that ended last back
    through, at each step, the dependency that ended last. The makespan is exactly the sum of
    the chain's step durations and of the waits before each of them, so what the run took over
    its ideal splits into time spent in the steps beyond the model's latency and time between
    them (the wait of a step through the queue includes any wait for a free slot)."""

    steps: int
    in_steps_s: float  # the chain's step durations minus the model's latency
    first_s: float  # the approval to the chain's first step's start
    carried: int  # steps of the chain its parent's process carried on to
    carried_s: float  # their waits after their parent's end
    queued: int  # steps of the chain that went through the queue
    queued_s: float

    def as_dict(self) -> dict[str, float | int]:
        return {
            "steps": self.steps,
            "in_steps_ms": round(self.in_steps_s * 1000, 1),
            "first_ms": round(self.first_s * 1000, 1),
            "carried": self.carried,
            "carried_ms": round(self.carried_s * 1000, 1),
            "queued": self.queued,
            "queued_ms": round(self.queued_s * 1000, 1),
        }


def critical_path(
    steps: Iterable[StepTiming], approved_at: float, latency_s: float
) -> CriticalPath:
    """The makespan's chain (CriticalPath) of a finished run's steps."""
    by_id = {step.step_id: step for step in steps}
    current = max(by_id.values(), key=lambda step: step.finished_at)
    chain = [current]
    while current.depends_on:
        current = max((by_id[p] for p in current.depends_on), key=lambda step: step.finished_at)
        chain.append(current)
    chain.reverse()
    carried = [(p, c) for p, c in zip(chain, chain[1:], strict=False) if c.carried]
    queued = [(p, c) for p, c in zip(chain, chain[1:], strict=False) if not c.carried]
    return CriticalPath(
        steps=len(chain),
        in_steps_s=sum(step.finished_at - step.started_at - latency_s for step in chain),
        first_s=chain[0].started_at - approved_at,
        carried=len(carried),
        carried_s=sum(child.started_at - parent.finished_at for parent, child in carried),
        queued=len(queued),
        queued_s=sum(child.started_at - parent.finished_at for parent, child in queued),
    )


def timeline(steps: Iterable[StepTiming], approved_at: float) -> list[list[Any]]:
    """Each step as [step_id, started, finished, carried], in milliseconds after the approval,
    in the order they started: what a run's waves and bursts are read from afterwards."""
    return [
        [
            step.step_id,
            round((step.started_at - approved_at) * 1000, 1),
            round((step.finished_at - approved_at) * 1000, 1),
            step.carried,
        ]
        for step in sorted(steps, key=lambda step: (step.started_at, step.step_id))
    ]


@dataclass
class Phases:
    to_queued: list[float]  # the last parent's end -> the child's step.queued
    to_started: list[float]  # step.queued -> the claim
    to_claiming: list[float]  # step.queued -> the claim begins (commit, enqueue, Celery)
    claim_waits: list[float]  # the claim's wait for the database's write lock


def dispatch_phases(
    steps: Iterable[StepTiming],
    queued_at: dict[str, float],
    leave_out: Iterable[str] = (),
    claim_waits: dict[str, float] | None = None,
) -> Phases:
    """Dispatch latency in parts, for each step with dependencies:

    ready -> queued: the last parent's end to the child's step.queued event, both inside the
    parent's finishing transaction; queued -> started: from there to the child's claim, which
    spans the commit, the broadcasts and the enqueue after it, Celery's delivery to a free slot
    and the claim's wait for the database's write lock (`claim_waits`, from each step.started,
    in seconds), and so: queued -> claiming, the rest. Steps in `leave_out` (those that waited
    for a slot) are not counted.
    """
    by_id = {step.step_id: step for step in steps}
    left_out = set(leave_out)
    waits = claim_waits or {}
    phases = Phases([], [], [], [])
    for step in by_id.values():
        if step.depends_on and step.step_id in queued_at and step.step_id not in left_out:
            ready_at = max(by_id[parent].finished_at for parent in step.depends_on)
            phases.to_queued.append(queued_at[step.step_id] - ready_at)
            phases.to_started.append(step.started_at - queued_at[step.step_id])
            if step.step_id in waits:
                wait = waits[step.step_id]
                phases.claim_waits.append(wait)
                phases.to_claiming.append(step.started_at - wait - queued_at[step.step_id])
    return phases


@dataclass
class Received:
    event_delays_s: list[float]
    copies_by_seq: dict[int, int]  # how many clients received each event
    text_messages: int  # live-text messages, which carry no time
    delays_by_type: dict[str, list[float]]  # "step.started": [...]


def messages_of(raw: bytes) -> list[dict[str, Any]]:
    """The messages of one WebSocket frame: itself, or those of a batch (`?batch=1`)."""
    message = json.loads(raw)
    return message["messages"] if message.get("type") == "batch" else [message]


def event_latencies(received: Iterable[tuple[float, bytes]]) -> Received:
    """Receive time minus the event's `at`, for every event message any client received (an
    event in a batch arrived with its frame)."""
    result = Received([], {}, 0, {})
    for received_at, raw in received:
        for message in messages_of(raw):
            _count(result, received_at, message)
    return result


def _count(result: Received, received_at: float, message: dict[str, Any]) -> None:
    if message.get("type") == "text":
        result.text_messages += 1
    if message.get("type") != "event":
        return
    event = message["event"]
    delay = received_at - datetime.fromisoformat(event["at"]).timestamp()
    result.event_delays_s.append(delay)
    result.delays_by_type.setdefault(event["type"], []).append(delay)
    result.copies_by_seq[event["seq"]] = result.copies_by_seq.get(event["seq"], 0) + 1


def publish_delays(published: Iterable[tuple[float, str]]) -> dict[str, Any]:
    """Arrival at a plain Redis subscriber minus the event's `at`, overall and by type: what
    of a watcher's wait (event_latencies) passed before Daphne had the event."""
    delays: list[float] = []
    by_type: dict[str, list[float]] = {}
    for arrived_at, text in published:
        event = json.loads(text)["event"]
        delay = arrived_at - datetime.fromisoformat(event["at"]).timestamp()
        delays.append(delay)
        by_type.setdefault(event["type"], []).append(delay)
    return {
        **summary_ms(delays),
        "by_type": {kind: summary_ms(values) for kind, values in sorted(by_type.items())},
    }


def publish_holds(arrivals: Sequence[tuple[float, int]]) -> dict[str, Any]:
    """For events as published ((arrival, seq), bench.publish_order): how many came before one
    with a lower sequence number, and for how long the consumer, which forwards in order,
    holds each of those back (until every event before it has come)."""
    by_seq = {seq: arrived for arrived, seq in arrivals}
    holds: list[float] = []
    last_in = float("-inf")
    for seq in sorted(by_seq):
        last_in = max(last_in, by_seq[seq])
        if last_in > by_seq[seq]:
            holds.append(last_in - by_seq[seq])
    return {"events": len(by_seq), "held": len(holds), "hold": summary_ms(holds)}
