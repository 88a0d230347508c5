"""What a person may do with a run and its steps now, and in what words they are told why not:
change its plan, retry a step, fork from one, pause, resume or cancel it.

The one home of these rules: the services enforce them (InvalidTransition with the words
here), the pages offer only what they allow, and the API gets the services' refusals. Each
function returns None when the action is allowed, else the sentence that says why not. Which
status a run or a step may move to is core.status's business; these say when a person may
ask for a move at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from . import dag
from .plan import SYNTHESIS_STEP_ID, SYNTHESIZER_ROLE
from .status import (
    FINISHED_STEP_STATUSES,
    TERMINAL_RUN_STATUSES,
    RunStatus,
    StepStatus,
    status_label,
)


class RunState(Protocol):
    """What the rules read off a run (the Run model has these fields)."""

    @property
    def status(self) -> str: ...
    @property
    def replanning(self) -> bool: ...
    @property
    def paused_at(self) -> object | None: ...
    @property
    def baseline_of_id(self) -> int | None: ...


# --- the plan --------------------------------------------------------------------------------

PLAN_CHANGES_WHILE = frozenset({RunStatus.AWAITING_PLAN_APPROVAL, RunStatus.RUNNING})


def plan_change_refusal(run: RunState) -> str | None:
    """A person may change the plan before approval, and while the run runs (then only the
    steps that have not started), unless the planner is revising it after a failure."""
    if run.status not in PLAN_CHANGES_WHILE:
        return f"This run is {status_label(run.status)}: its plan can no longer be changed."
    if run.replanning:
        return (
            "The planner is revising this run's plan after a failure: change it once the "
            "re-plan is decided."
        )
    return None


# Why a step that has started is locked, in the words a person reads on its card.
_STARTED = {
    StepStatus.QUEUED: "it is queued to run",
    StepStatus.RUNNING: "it is running",
    StepStatus.WAITING: "it waits for a person",
    StepStatus.SUCCEEDED: "it has run",
    StepStatus.FAILED: "it has run and failed",
    StepStatus.SKIPPED: "it was skipped",
}


def step_change_refusal(status: str) -> str | None:
    """Of a plan that may change, only the steps that have not started change."""
    if status == StepStatus.PENDING:
        return None
    return f"{_STARTED[StepStatus(status)]}; only steps that have not started change"


def step_edit_refusal(role: str, status: str) -> str | None:
    """Of a plan that may change, why a person may not edit this step by hand (None: they
    may): the synthesizer's step is the run's, not the plan's, and only the steps that have
    not started change. The step's card and its edit forms both ask here."""
    if role == SYNTHESIZER_ROLE:
        return "The synthesizer's step is not edited: it assembles what the others made."
    return step_change_refusal(status)


# --- going back: retry and fork --------------------------------------------------------------

RETRIES_WHILE = frozenset({RunStatus.RUNNING, RunStatus.SUCCEEDED, RunStatus.FAILED})
BASELINE_REFUSAL = (
    "A single-agent baseline is one step with one growing context: re-run it as a baseline "
    "from the original run instead."
)


def retry_refusal(run: RunState) -> str | None:
    """A person may retry steps of a run that has started, unless it was cancelled, is a
    single-agent baseline or waits for a re-plan. A finished run opens again for it."""
    if run.status not in RETRIES_WHILE:
        return f"This run is {status_label(run.status)}, so none of its steps can be retried."
    if run.replanning:
        return "A re-plan is being decided: retry once it is."
    if run.baseline_of_id:
        return BASELINE_REFUSAL
    return None


def step_retry_refusal(step_id: str, status: str) -> str | None:
    """Only a step that has finished (succeeded, failed or skipped) runs again."""
    if status in FINISHED_STEP_STATUSES:
        return None
    return (
        f"Step '{step_id}' is {status_label(status)}: only a step that has finished or failed "
        "can be retried."
    )


def downstream_retry_refusal(after: Iterable[tuple[str, str]]) -> str | None:
    """The steps after a retried one (step id, status; in the plan's order) run again too
    only if none of them is under way."""
    idle = {*FINISHED_STEP_STATUSES, StepStatus.PENDING}
    for step_id, status in after:
        if status not in idle:
            return (
                f"Step '{step_id}' after it is {status_label(status)}: retry once it has "
                "finished, or retry this step alone."
            )
    return None


def fork_refusal(run: RunState) -> str | None:
    """Any run but a single-agent baseline may be forked (from a step whose inputs are done:
    fork_step_refusal), whatever its status: the fork is a new run of the same plan."""
    return BASELINE_REFUSAL if run.baseline_of_id else None


def fork_step_refusal(
    step_id: str, depends_on: Mapping[str, Sequence[str]], statuses: Mapping[str, str]
) -> str | None:
    """A fork starts from a step whose inputs (the steps it depends on, directly or not) all
    succeeded; not from the synthesis, which is the deliverable itself."""
    if step_id not in depends_on or step_id == SYNTHESIS_STEP_ID:
        return f"This run has no step '{step_id}' to fork from."
    before = dag.ancestors(depends_on, step_id)
    unfinished = sorted(s for s in before if statuses[s] != StepStatus.SUCCEEDED)
    if unfinished:
        return (
            f"Step '{unfinished[0]}', which '{step_id}' depends on, has not succeeded: fork "
            "from a step whose inputs are all done."
        )
    return None


def forkable_steps(
    depends_on: Mapping[str, Sequence[str]], statuses: Mapping[str, str]
) -> set[str]:
    """The steps fork_step_refusal lets a fork start from, all at once: in one pass over the
    plan, where asking it of each step walked each one's ancestors (quadratic in the plan, for
    the fork buttons of a 1,000-step run's page)."""
    succeeded = {s for s, status in statuses.items() if status == StepStatus.SUCCEEDED}
    return dag.upstream_done(depends_on, succeeded) - {SYNTHESIS_STEP_ID}


def approval_refusal(run: RunState) -> str | None:
    """A plan is approved once, while the run waits for it."""
    if run.status != RunStatus.AWAITING_PLAN_APPROVAL:
        return f"This run is {status_label(run.status)}, so its plan cannot be approved now."
    return None


# --- pause, resume, cancel -------------------------------------------------------------------


# The statuses a run may be paused in: before its plan is approved too, so that a run paused
# while it plans gets its plan and holds its steps (dispatch_ready starts none while paused).
_PAUSABLE = (RunStatus.PLANNING, RunStatus.AWAITING_PLAN_APPROVAL, RunStatus.RUNNING)


def pause_refusal(run: RunState) -> str | None:
    """A run that has not ended may be paused once: no new step starts until it is resumed."""
    if run.status not in _PAUSABLE or run.paused_at:
        state = "paused already" if run.paused_at else status_label(run.status)
        return f"This run is {state}, so it cannot be paused."
    return None


def resume_refusal(run: RunState) -> str | None:
    if run.status not in _PAUSABLE or not run.paused_at:
        return (
            f"This run is {status_label(run.status)} and not paused, so there is nothing to resume."
        )
    return None


def cancel_refusal(run: RunState) -> str | None:
    """Any run that has not ended may be cancelled; a cancelled run stays over."""
    if run.status in TERMINAL_RUN_STATUSES:
        return f"This run is already {status_label(run.status)}, so it cannot be cancelled."
    return None
