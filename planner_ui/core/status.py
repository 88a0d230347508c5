"""Run and step statuses with their allowed transitions, as plain data."""

from __future__ import annotations

from collections.abc import Iterable
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
    # A person retrying a step of a finished run opens it again; a cancelled run stays over.
    RunStatus.SUCCEEDED: frozenset({RunStatus.RUNNING}),
    RunStatus.FAILED: frozenset({RunStatus.RUNNING}),
    RunStatus.CANCELLED: frozenset(),
}

# Where a step may go from each status. Services move steps with conditional UPDATEs whose
# sources come from this table (Step.objects.move_to), so a move it does not list never happens.
STEP_TRANSITIONS: dict[StepStatus, frozenset[StepStatus]] = {
    StepStatus.PENDING: frozenset({StepStatus.QUEUED, StepStatus.SKIPPED}),
    StepStatus.QUEUED: frozenset({StepStatus.RUNNING, StepStatus.SKIPPED}),
    # RUNNING → RUNNING: a redelivered task takes over a step whose worker stopped.
    StepStatus.RUNNING: frozenset(
        {
            StepStatus.RUNNING,
            StepStatus.WAITING,
            StepStatus.SUCCEEDED,
            StepStatus.FAILED,
            StepStatus.SKIPPED,
        }
    ),
    StepStatus.WAITING: frozenset({StepStatus.QUEUED, StepStatus.SKIPPED}),
    # A person may retry a finished step.
    StepStatus.SUCCEEDED: frozenset({StepStatus.PENDING}),
    # A re-plan re-makes the steps it does not keep: a failed or skipped one may run again.
    StepStatus.FAILED: frozenset({StepStatus.PENDING}),
    StepStatus.SKIPPED: frozenset({StepStatus.PENDING}),
}

TERMINAL_RUN_STATUSES = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED})
FINISHED_STEP_STATUSES = frozenset({StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED})
ACTIVE_STEP_STATUSES = frozenset({StepStatus.QUEUED, StepStatus.RUNNING, StepStatus.WAITING})
# A run is over only when none of its steps is in one of these.
UNFINISHED_STEP_STATUSES = frozenset(StepStatus) - FINISHED_STEP_STATUSES
# How far along the lifecycle each status is: the page never shows a step going backwards when
# events and a fragment refresh cross (a re-plan resets steps with a new plan version).
STEP_PROGRESS: dict[StepStatus, int] = {
    StepStatus.PENDING: 0,
    StepStatus.QUEUED: 1,
    StepStatus.RUNNING: 2,
    StepStatus.WAITING: 2,
    **{status: 3 for status in FINISHED_STEP_STATUSES},
}
# Done or under way: a re-plan keeps these steps exactly as they are.
KEPT_BY_REPLAN = frozenset(
    {StepStatus.SUCCEEDED, StepStatus.RUNNING, StepStatus.QUEUED, StepStatus.WAITING}
)


def status_label(status: str) -> str:
    """A status as a person reads it, as the models label it too (models._choices):
    "awaiting plan approval"."""
    return str(status).replace("_", " ")


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


def step_sources(new: str, only_from: Iterable[str] | None = None) -> frozenset[StepStatus]:
    """The statuses a step may move to `new` from, narrowed to `only_from` when given.

    Asking for a source the table does not allow is a bug in the caller, and raises."""
    dst = StepStatus(new)
    allowed = frozenset(src for src, targets in STEP_TRANSITIONS.items() if dst in targets)
    if only_from is None:
        return allowed
    wanted = frozenset(StepStatus(s) for s in only_from)
    if not wanted <= allowed:
        bad = ", ".join(sorted(wanted - allowed))
        raise InvalidTransition(
            f"a step cannot go from {bad} to {dst}; allowed into {dst} from: "
            f"{', '.join(sorted(allowed)) or 'nowhere'}"
        )
    return wanted
