"""Editing a running run's plan: the steps that have not started change, the others are locked
and say why; an edit lands whole before a step starts or is refused whole, never half."""

from __future__ import annotations

import pytest

from planner_ui.core.edits import AddStep, DeleteStep, EditRefused, UpdateStep
from planner_ui.core.errors import InvalidTransition
from planner_ui.core.plan import SYNTHESIS_STEP_ID
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import PlanVersion
from planner_ui.providers.scripted import script
from planner_ui.services.plans import plan_edit
from planner_ui.services.runs import run_approve_plan, run_create, run_plan
from planner_ui.services.steps import step_execute
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

TASK = "Research the history of tea, then write a short summary"


@pytest.fixture
def running(make_user):
    run = planned(make_user(), TASK)
    run_approve_plan(run.pk)
    run.refresh_from_db()
    assert run.steps.get(step_id="research-history-tea").status == StepStatus.QUEUED
    return run


def status(run, step_id: str) -> str:
    return run.steps.get(step_id=step_id).status


def test_a_step_that_has_not_started_is_edited_while_the_run_runs(running):
    version = plan_edit(
        run_id=running.pk,
        base_version=1,
        edit=UpdateStep("write-short-summary", instruction="Write a haiku about tea."),
    )
    assert (version.number, version.author) == (2, PlanVersion.Author.PERSON)
    step = running.steps.get(step_id="write-short-summary")
    assert step.instruction == "Write a haiku about tea." and step.status == StepStatus.PENDING
    assert status(running, "research-history-tea") == StepStatus.QUEUED
    assert running.events.filter(type="plan.version", payload__number=2).exists()


def test_a_step_that_has_started_is_locked_and_says_why(running):
    with pytest.raises(EditRefused) as refused:
        plan_edit(
            run_id=running.pk,
            base_version=1,
            edit=UpdateStep("research-history-tea", title="Research coffee"),
        )
    assert refused.value.errors == [
        "step 'research-history-tea' is queued, so it can no longer be changed: only steps "
        "that have not started can be"
    ]
    assert running.plan_versions.count() == 1


def test_a_step_added_whose_inputs_are_done_starts_at_once(running):
    plan_edit(
        run_id=running.pk,
        base_version=1,
        edit=AddStep("", "Research mate", "Research the history of mate.", "researcher"),
    )
    assert status(running, "research-mate") == StepStatus.QUEUED
    synthesis = running.steps.get(step_id=SYNTHESIS_STEP_ID)
    assert "research-mate" in synthesis.depends_on and synthesis.waiting_on == 2


def test_a_step_removed_before_it_started_is_skipped_with_the_reason(running):
    plan_edit(run_id=running.pk, base_version=1, edit=DeleteStep("write-short-summary"))
    step = running.steps.get(step_id="write-short-summary")
    assert step.status == StepStatus.SKIPPED
    assert step.error == "removed by person in version 2"
    run = drive(running)
    assert run.status == RunStatus.SUCCEEDED
    assert run.steps.get(step_id=SYNTHESIS_STEP_ID).depends_on == ["research-history-tea"]


def test_an_edit_that_comes_after_the_step_was_dispatched_is_refused_whole(running):
    # The research finishes and dispatches the summary before the person's edit arrives.
    step_execute(running.pk, "research-history-tea", "w")
    assert status(running, "write-short-summary") == StepStatus.QUEUED
    with pytest.raises(EditRefused) as refused:
        plan_edit(
            run_id=running.pk,
            base_version=1,
            edit=UpdateStep("write-short-summary", instruction="Write a haiku."),
        )
    assert "step 'write-short-summary' is queued" in refused.value.errors[0]
    assert running.plan_versions.count() == 1
    assert running.steps.get(step_id="write-short-summary").instruction != "Write a haiku."


def test_no_edit_once_the_synthesizer_has_started(running):
    drive_until = ["research-history-tea", "write-short-summary"]
    for step_id in drive_until:
        step_execute(running.pk, step_id, "w")
    assert status(running, SYNTHESIS_STEP_ID) == StepStatus.QUEUED
    with pytest.raises(InvalidTransition, match="The synthesizer is assembling the deliverable"):
        plan_edit(
            run_id=running.pk,
            base_version=1,
            edit=AddStep("", "Research mate", "Research mate.", "researcher"),
        )


PLAN = {
    "goal": "Tea",
    "steps": [
        {
            "id": "gather",
            "title": "Gather",
            "instruction": "Gather facts about tea.",
            "role": "researcher",
            "tools": [],
            "depends_on": [],
        },
        {
            "id": "write",
            "title": "Write",
            "instruction": "Write a summary.",
            "role": "writer",
            "tools": [],
            "depends_on": ["gather"],
        },
    ],
}


def test_the_edited_instruction_is_what_the_executor_receives(make_user):
    script("edit-planner").plan(PLAN)
    executor = script("edit-executor").text("Facts.").text("A haiku.").text("# Tea")
    routes = {"planner": "scripted:edit-planner", "executor": "scripted:edit-executor"}
    run = run_create(owner=make_user(), options=RunOptions(task="tea", routes=routes))
    run_plan(run.pk)
    run_approve_plan(run.pk)
    plan_edit(run_id=run.pk, base_version=1, edit=UpdateStep("write", instruction="Write a haiku."))
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED
    sent = executor.requests[1].messages[0]["content"]
    assert sent.startswith("<instruction>\nWrite a haiku.\n</instruction>")
