"""Run status transitions: what is allowed, and the exact words when it is not."""

from __future__ import annotations

import itertools

import pytest

from planner_ui.core.errors import AgentError, InvalidTransition
from planner_ui.core.status import (
    RUN_TRANSITIONS,
    TERMINAL_RUN_STATUSES,
    RunStatus,
    check_run_transition,
)

ALLOWED = [
    ("planning", "awaiting_plan_approval"),
    ("planning", "failed"),
    ("planning", "cancelled"),
    ("awaiting_plan_approval", "running"),
    ("awaiting_plan_approval", "cancelled"),
    ("running", "succeeded"),
    ("running", "failed"),
    ("running", "cancelled"),
    # A person retrying a step of a finished run opens it again.
    ("succeeded", "running"),
    ("failed", "running"),
]


@pytest.mark.parametrize(("current", "new"), ALLOWED)
def test_allowed_transitions_return_the_new_status(current: str, new: str) -> None:
    result = check_run_transition(current, new)

    assert result is RunStatus(new)


def test_the_table_allows_exactly_these_transitions() -> None:
    table = {(str(src), str(dst)) for src, targets in RUN_TRANSITIONS.items() for dst in targets}

    assert table == set(ALLOWED)


@pytest.mark.parametrize(
    ("current", "new", "message"),
    [
        (
            "planning",
            "running",
            "a run cannot go from planning to running; "
            "allowed from planning: awaiting_plan_approval, cancelled, failed",
        ),
        (
            "awaiting_plan_approval",
            "succeeded",
            "a run cannot go from awaiting_plan_approval to succeeded; "
            "allowed from awaiting_plan_approval: cancelled, running",
        ),
        (
            "running",
            "planning",
            "a run cannot go from running to planning; "
            "allowed from running: cancelled, failed, succeeded",
        ),
        (
            "running",
            "running",
            "a run cannot go from running to running; "
            "allowed from running: cancelled, failed, succeeded",
        ),
        (
            "succeeded",
            "planning",
            "a run cannot go from succeeded to planning; allowed from succeeded: running",
        ),
        (
            "cancelled",
            "planning",
            "a run cannot go from cancelled to planning; "
            "allowed from cancelled: none (it is finished)",
        ),
    ],
)
def test_refused_transitions_say_what_is_allowed(current: str, new: str, message: str) -> None:
    with pytest.raises(InvalidTransition) as caught:
        check_run_transition(current, new)

    assert str(caught.value) == message
    assert isinstance(caught.value, AgentError)


def test_every_transition_outside_the_table_is_refused() -> None:
    for src, dst in itertools.product(RunStatus, RunStatus):
        if (str(src), str(dst)) in ALLOWED:
            continue
        with pytest.raises(InvalidTransition):
            check_run_transition(src, dst)


def test_finished_runs_are_the_terminal_ones() -> None:
    assert TERMINAL_RUN_STATUSES == {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED}


def test_statuses_are_their_stored_strings() -> None:
    assert RunStatus.AWAITING_PLAN_APPROVAL == "awaiting_plan_approval"
    assert f"{RunStatus.RUNNING}" == "running"
