"""What a person may do with a run and its steps in each state, and the exact words when not:
the table the services enforce and the pages offer (core.run_rules)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from planner_ui.core.run_rules import (
    BASELINE_REFUSAL,
    approval_refusal,
    cancel_refusal,
    downstream_retry_refusal,
    fork_refusal,
    fork_step_refusal,
    forkable_steps,
    pause_refusal,
    plan_change_refusal,
    resume_refusal,
    retry_refusal,
    step_change_refusal,
    step_edit_refusal,
    step_retry_refusal,
)
from planner_ui.core.status import RunStatus, StepStatus, status_label


@dataclass(frozen=True)
class Run:
    status: str
    replanning: bool = False
    paused_at: object | None = None
    baseline_of_id: int | None = None


R = RunStatus
PLANNING, AWAITING, RUNNING = R.PLANNING, R.AWAITING_PLAN_APPROVAL, R.RUNNING
SUCCEEDED, FAILED, CANCELLED = R.SUCCEEDED, R.FAILED, R.CANCELLED
PAUSED = Run(RUNNING, paused_at="12:00")
REPLANNING = Run(RUNNING, replanning=True)
BASELINE = Run(SUCCEEDED, baseline_of_id=7)

RULES = {
    "change the plan": plan_change_refusal,
    "retry": retry_refusal,
    "fork": fork_refusal,
    "approve": approval_refusal,
    "pause": pause_refusal,
    "resume": resume_refusal,
    "cancel": cancel_refusal,
}
# What a person may do with each run.
TABLE = {
    "planning": (Run(PLANNING), {"fork", "pause", "cancel"}),
    "awaiting approval": (
        Run(AWAITING),
        {"change the plan", "fork", "approve", "pause", "cancel"},
    ),
    "running": (Run(RUNNING), {"change the plan", "retry", "fork", "pause", "cancel"}),
    "paused": (PAUSED, {"change the plan", "retry", "fork", "resume", "cancel"}),
    "re-planning": (REPLANNING, {"fork", "pause", "cancel"}),
    "succeeded": (Run(SUCCEEDED), {"retry", "fork"}),
    "failed": (Run(FAILED), {"retry", "fork"}),
    "cancelled": (Run(CANCELLED), {"fork"}),
    "a baseline": (BASELINE, set()),
}


@pytest.mark.parametrize(("run", "allowed"), TABLE.values(), ids=TABLE.keys())
def test_what_each_run_allows(run: Run, allowed: set[str]) -> None:
    assert {action for action, rule in RULES.items() if rule(run) is None} == allowed


def test_refusals_say_why_in_the_words_a_person_reads() -> None:
    assert plan_change_refusal(Run(SUCCEEDED)) == (
        "This run is succeeded: its plan can no longer be changed."
    )
    assert plan_change_refusal(REPLANNING) == (
        "The planner is revising this run's plan after a failure: change it once the re-plan "
        "is decided."
    )
    assert retry_refusal(Run(AWAITING)) == (
        "This run is awaiting plan approval, so none of its steps can be retried."
    )
    assert retry_refusal(REPLANNING) == "A re-plan is being decided: retry once it is."
    assert retry_refusal(BASELINE) == fork_refusal(BASELINE) == BASELINE_REFUSAL
    assert approval_refusal(Run(RUNNING)) == (
        "This run is running, so its plan cannot be approved now."
    )
    assert pause_refusal(PAUSED) == "This run is paused already, so it cannot be paused."
    assert pause_refusal(Run(FAILED)) == "This run is failed, so it cannot be paused."
    assert resume_refusal(Run(RUNNING)) == (
        "This run is running and not paused, so there is nothing to resume."
    )
    assert cancel_refusal(Run(CANCELLED)) == (
        "This run is already cancelled, so it cannot be cancelled."
    )


def test_only_a_step_that_has_not_started_changes() -> None:
    assert step_change_refusal(StepStatus.PENDING) is None
    assert step_change_refusal(StepStatus.WAITING) == (
        "it waits for a person; only steps that have not started change"
    )
    assert all(step_change_refusal(s) for s in StepStatus if s != StepStatus.PENDING)


def test_the_synthesizers_step_is_never_edited_by_hand_and_others_as_they_change() -> None:
    assert step_edit_refusal("synthesizer", StepStatus.PENDING) == (
        "The synthesizer's step is not edited: it assembles what the others made."
    )
    for status in StepStatus:
        assert step_edit_refusal("writer", status) == step_change_refusal(status)


def test_only_a_finished_step_is_retried_and_not_while_a_later_one_is_under_way() -> None:
    finished = {StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED}
    assert {s for s in StepStatus if step_retry_refusal("a", s) is None} == finished
    assert step_retry_refusal("a", StepStatus.QUEUED) == (
        "Step 'a' is queued: only a step that has finished or failed can be retried."
    )
    assert downstream_retry_refusal([("b", "pending"), ("c", "failed")]) is None
    assert downstream_retry_refusal([("b", "pending"), ("c", "running"), ("d", "queued")]) == (
        "Step 'c' after it is running: retry once it has finished, or retry this step alone."
    )


def test_a_fork_starts_from_a_step_whose_inputs_all_succeeded_never_the_synthesis() -> None:
    depends_on = {"a": [], "b": ["a"], "c": ["b"], "synthesis": ["c"]}
    statuses = {"a": "succeeded", "b": "failed", "c": "pending", "synthesis": "pending"}

    assert fork_step_refusal("a", depends_on, statuses) is None
    assert fork_step_refusal("b", depends_on, statuses) is None
    assert fork_step_refusal("c", depends_on, statuses) == (
        "Step 'b', which 'c' depends on, has not succeeded: fork from a step whose inputs are "
        "all done."
    )
    assert fork_step_refusal("synthesis", depends_on, statuses) == (
        "This run has no step 'synthesis' to fork from."
    )
    assert fork_step_refusal("z", depends_on, statuses) == "This run has no step 'z' to fork from."


def test_a_status_reads_as_the_models_label() -> None:
    assert status_label(AWAITING) == "awaiting plan approval"
    assert status_label(StepStatus.WAITING) == "waiting"


def test_forkable_steps_are_those_fork_step_refusal_lets_through() -> None:
    deps = {"a": [], "b": ["a"], "c": ["b"], "d": [], "synthesis": ["c", "d"]}
    for statuses in [
        {"a": "succeeded", "b": "succeeded", "c": "failed", "d": "pending", "synthesis": "pending"},
        {s: "succeeded" for s in deps},
        {s: "pending" for s in deps},
    ]:
        expected = {s for s in deps if fork_step_refusal(s, deps, statuses) is None}
        assert forkable_steps(deps, statuses) == expected
