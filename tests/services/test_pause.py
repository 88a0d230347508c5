"""Pausing a run: no step starts while it is paused, the steps under way finish, and resuming
starts what became ready meanwhile. The pause is in the database, whatever restarts."""

from __future__ import annotations

import pytest

from planner_ui.core.errors import InvalidTransition
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.services.runs import run_approve_plan, run_cancel, run_pause, run_resume
from planner_ui.services.steps import step_execute
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

TASK = "Research the history of tea, then write a short summary"


@pytest.fixture
def running(make_user):
    run = planned(make_user(), TASK)
    run_approve_plan(run.pk)
    return run


def status(run, step_id: str) -> str:
    return run.steps.get(step_id=step_id).status


def test_a_paused_run_starts_nothing_new_and_the_step_under_way_finishes(running):
    run_pause(running.pk, running.owner)
    step_execute(running.pk, "research-history-tea", "w")  # queued before the pause
    assert status(running, "research-history-tea") == StepStatus.SUCCEEDED
    assert status(running, "write-short-summary") == StepStatus.PENDING
    running.refresh_from_db()
    assert running.status == RunStatus.RUNNING and running.paused_at is not None
    assert running.events.filter(type="run.paused", payload__by="alice").exists()


def test_resuming_starts_what_became_ready_and_the_run_finishes(running):
    run_pause(running.pk, running.owner)
    step_execute(running.pk, "research-history-tea", "w")
    run_resume(running.pk, running.owner)
    assert status(running, "write-short-summary") == StepStatus.QUEUED
    run = drive(running)
    assert run.status == RunStatus.SUCCEEDED and run.paused_at is None
    types = list(run.events.values_list("type", flat=True))
    assert types.index("run.paused") < types.index("run.resumed")


def test_pausing_twice_or_resuming_a_run_that_is_not_paused_says_why(running):
    with pytest.raises(InvalidTransition, match="not paused, so there is nothing to resume"):
        run_resume(running.pk, running.owner)
    run_pause(running.pk, running.owner)
    with pytest.raises(InvalidTransition, match="This run is paused already"):
        run_pause(running.pk, running.owner)


def test_a_paused_run_can_still_be_cancelled(running):
    run_pause(running.pk, running.owner)
    run_cancel(running.pk, running.owner)
    running.refresh_from_db()
    assert running.status == RunStatus.CANCELLED and running.paused_at is None
    with pytest.raises(InvalidTransition, match="cannot be paused"):
        run_pause(running.pk, running.owner)


def test_a_run_paused_while_planning_makes_its_plan_and_starts_no_step_until_resumed(
    make_user,
):
    from planner_ui.core.run_options import RunOptions
    from planner_ui.services.runs import run_create, run_plan
    from tests.services.test_runs import drive

    user = make_user()
    run = run_create(owner=user, options=RunOptions(task=TASK, auto_approve=True))
    run_pause(run.pk, user)
    run_plan(run.pk)  # the planner's task, as a worker runs it
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.paused_at is not None
    assert run.steps.exists()
    assert not run.steps.exclude(status=StepStatus.PENDING).exists()
    run_resume(run.pk, user)
    assert status(run, "research-history-tea") == StepStatus.QUEUED
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED and run.paused_at is None


def test_a_run_resumed_before_its_plan_is_made_starts_its_steps_as_if_never_paused(make_user):
    from planner_ui.core.run_options import RunOptions
    from planner_ui.services.runs import run_create, run_plan

    user = make_user()
    run = run_create(owner=user, options=RunOptions(task=TASK, auto_approve=True))
    run_pause(run.pk, user)
    run_resume(run.pk, user)
    run_plan(run.pk)
    assert status(run, "research-history-tea") == StepStatus.QUEUED
    with pytest.raises(InvalidTransition, match="not paused, so there is nothing to resume"):
        run_resume(run.pk, user)
