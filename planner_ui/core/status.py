"""Run and step statuses with their allowed transitions, as plain data."""

from __future__ import annotations

from enum import StrEnum

from .errors import InvalidTransition


class RunStatus(StrEnum):
    PLANNING = "planning"
    AWAITING_PLAN_APPROVAL = "awaiting_plan_approval"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class StepStatus(StrEnum):
    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    # Paused before an irreversible call until a person decides; holds no worker meanwhile.
    WAITING = "waiting"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


RUN_TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.PLANNING: frozenset(
        {RunStatus.AWAITING_PLAN_APPROVAL, RunStatus.FAILED, RunStatus.CANCELLED}
    ),
    RunStatus.AWAITING_PLAN_APPROVAL: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED}),
    RunStatus.RUNNING: frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED}),
    RunStatus.SUCCEEDED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
}

TERMINAL_RUN_STATUSES = frozenset(s for s, nxt in RUN_TRANSITIONS.items() if not nxt)
FINISHED_STEP_STATUSES = frozenset({StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED})
ACTIVE_STEP_STATUSES = frozenset({StepStatus.QUEUED, StepStatus.RUNNING, StepStatus.WAITING})


def check_run_transition(current: str, new: str) -> RunStatus:
    """Return `new` as a RunStatus if a run may move there from `current`, else raise."""
    try:
        src, dst = RunStatus(current), RunStatus(new)
    except ValueError:
        known = ", ".join(RunStatus)
        raise InvalidTransition(
            f"unknown run status in {current!r} → {new!r}; known statuses: {known}"
        ) from None
    if dst not in RUN_TRANSITIONS[src]:
        allowed = ", ".join(sorted(RUN_TRANSITIONS[src])) or "none (it is finished)"
        raise InvalidTransition(
            f"a run cannot go from {src} to {dst}; allowed from {src}: {allowed}"
        )
    return dst
