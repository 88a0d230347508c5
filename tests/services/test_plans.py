"""Plan versions through the services: edits, refusals, conflicts, undo, import, approval."""

from __future__ import annotations

import json

import pytest

from planner_ui.core.edits import AddDependency, AddStep, DeleteStep, RemoveDependency, UpdateStep
from planner_ui.core.errors import InvalidTransition, PlanValidationError
from planner_ui.core.status import RunStatus
from planner_ui.models import PlanVersion
from planner_ui.services.plans import PlanConflict, plan_edit, plan_export, plan_import, plan_undo
from planner_ui.services.runs import run_approve_plan
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

TASK = "Research the history of tea, then write a short summary"


@pytest.fixture
def run(make_user):
    run = planned(make_user(), TASK)
    assert [s["id"] for s in run.plan_versions.get().plan["steps"]] == [
        "research-history-tea",
        "write-short-summary",
    ]
    return run


def test_an_edit_makes_a_new_person_version_and_new_steps(run):
    version = plan_edit(
        run_id=run.pk,
        base_version=1,
        edit=UpdateStep("write-short-summary", title="Write a haiku", instruction="A haiku."),
    )
    assert (version.number, version.author) == (2, PlanVersion.Author.PERSON)
    assert version.note
    step = run.steps.get(step_id="write-short-summary")
    assert (step.title, step.instruction) == ("Write a haiku", "A haiku.")
    # The planner's version is untouched.
    assert run.plan_versions.get(number=1).plan["steps"][1]["title"] != "Write a haiku"
    assert run.events.filter(type="plan.version").count() == 2


def test_a_refused_edit_leaves_the_plan_as_it_was(run):
    steps_before = list(run.steps.values_list("step_id", "depends_on"))
    with pytest.raises(PlanValidationError) as exc:
        plan_edit(
            run_id=run.pk,
            base_version=1,
            edit=AddDependency("research-history-tea", "write-short-summary"),
        )
    assert "cycle" in exc.value.errors[0]
    with pytest.raises(PlanValidationError) as exc:
        plan_edit(
            run_id=run.pk, base_version=1, edit=UpdateStep("research-history-tea", tools=("rm_rf",))
        )
    assert any("unknown tool 'rm_rf'" in e for e in exc.value.errors)
    assert run.plan_versions.count() == 1
    assert list(run.steps.values_list("step_id", "depends_on")) == steps_before


def test_a_stale_edit_is_a_conflict(run):
    plan_edit(run_id=run.pk, base_version=1, edit=UpdateStep("write-short-summary", title="One"))
    with pytest.raises(PlanConflict) as exc:
        plan_edit(
            run_id=run.pk, base_version=1, edit=UpdateStep("write-short-summary", title="Two")
        )
    assert str(exc.value) == (
        "The plan changed since you opened it: you edited version 1, but version 2 is the "
        "current one now. Your change was not applied; here is the current plan."
    )
    assert run.steps.get(step_id="write-short-summary").title == "One"


def test_add_connect_delete_and_undo(run):
    plan_edit(
        run_id=run.pk,
        base_version=1,
        edit=AddStep(
            "check",
            "Check facts",
            "Check the facts.",
            "critic",
            depends_on=("research-history-tea",),
        ),
    )
    plan_edit(run_id=run.pk, base_version=2, edit=AddDependency("write-short-summary", "check"))
    summary = run.steps.get(step_id="write-short-summary")
    assert summary.depends_on == ["research-history-tea", "check"]
    assert run.steps.get(step_id="synthesis").depends_on == ["write-short-summary"]
    plan_edit(
        run_id=run.pk,
        base_version=3,
        edit=RemoveDependency("write-short-summary", "research-history-tea"),
    )
    plan_edit(run_id=run.pk, base_version=4, edit=DeleteStep("check"))
    # Reconnected: the summary now depends on what 'check' depended on.
    assert run.steps.get(step_id="write-short-summary").depends_on == ["research-history-tea"]
    undone = plan_undo(run_id=run.pk, base_version=5)
    assert undone.number == 6 and undone.plan == run.plan_versions.get(number=4).plan
    assert run.steps.filter(step_id="check").exists()


def test_undo_of_the_first_plan_is_refused(run):
    with pytest.raises(InvalidTransition, match="There is nothing to undo"):
        plan_undo(run_id=run.pk, base_version=1)


def test_import_and_export_round_trip(run):
    exported = plan_export(run.plan_versions.get())
    data = json.loads(exported)
    data["steps"][0]["title"] = "Imported title"
    version = plan_import(run_id=run.pk, base_version=1, text=json.dumps(data))
    assert version.note == "imported from JSON"
    assert run.steps.get(step_id="research-history-tea").title == "Imported title"


def test_an_invalid_import_is_refused_with_its_errors(run):
    with pytest.raises(PlanValidationError) as exc:
        plan_import(run_id=run.pk, base_version=1, text='{"steps": [{"id": "a"}]}')
    assert exc.value.errors[0].startswith("step 'a' title: Field required")
    with pytest.raises(PlanValidationError) as exc:
        plan_import(run_id=run.pk, base_version=1, text="not json")
    assert exc.value.errors[0].startswith("the plan is not valid JSON")
    assert run.plan_versions.count() == 1


def test_approval_runs_exactly_the_version_the_person_saw(run):
    plan_edit(
        run_id=run.pk,
        base_version=1,
        edit=UpdateStep("write-short-summary", instruction="Write exactly one sentence about tea."),
    )
    with pytest.raises(PlanConflict):
        run_approve_plan(run.pk, version_number=1)
    run_approve_plan(run.pk, version_number=2)
    run.refresh_from_db()
    assert run.approved_plan.number == 2
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    # The executor received the edited instruction, not the planner's.
    started = run.steps.get(step_id="write-short-summary")
    assert started.instruction == "Write exactly one sentence about tea."


def test_no_edits_once_the_run_has_ended(run):
    run_approve_plan(run.pk)
    drive(run)
    with pytest.raises(InvalidTransition) as exc:
        plan_edit(run_id=run.pk, base_version=1, edit=UpdateStep("write-short-summary", title="x"))
    assert str(exc.value) == "This run is succeeded: its plan can no longer be changed."
