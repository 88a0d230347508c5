"""Plan templates: a finished run's plan saved with a parameter, run again for other values
without the planner, through the usual approval; versions, sharing and ownership."""

from __future__ import annotations

import pytest

from planner_ui.core.errors import PlanValidationError
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.core.templates import ParameterError
from planner_ui.models import ModelCall, PlanTemplate, Run
from planner_ui.selectors.templates import (
    template_get_by_name,
    template_get_for_user,
    template_list_for_user,
    template_runs_for_user,
)
from planner_ui.services.runs import RunInputError, run_approve_plan
from planner_ui.services.templates import (
    TemplateRefused,
    template_run,
    template_save,
    template_save_from_run,
    template_share,
)

from .test_runs import drive, planned

pytestmark = pytest.mark.django_db

TASK = "Research the weather in Paris, then write a short summary"


@pytest.fixture
def finished(alice) -> Run:
    run = planned(alice, TASK)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


@pytest.fixture
def saved(finished, alice):
    version = finished.plan_versions.get(number=1)
    return template_save_from_run(
        user=alice, version=version, name="Weather", replace=[("Paris", "city")]
    )


def test_save_from_a_run_makes_a_parameter_of_the_text(saved, finished) -> None:
    assert saved.number == 1
    assert saved.task == "Research the weather in {city}, then write a short summary"
    assert saved.parameters[0]["name"] == "city"
    assert saved.parameters[0]["default"] == "Paris"
    assert saved.source_run == finished and saved.source_plan.number == 1
    assert saved.note == f"from run {finished.pk}, plan v1"


def test_each_save_is_a_new_version(saved, finished, alice) -> None:
    again = template_save_from_run(
        user=alice,
        version=finished.plan_versions.get(number=1),
        name="Weather",
        replace=[("Paris", "town")],
        note="renamed the parameter",
    )
    assert again.template == saved.template and again.number == 2
    assert [v.number for v in saved.template.versions.all()] == [1, 2]
    with pytest.raises(ValueError, match="immutable"):
        again.save()


def test_running_a_template_skips_the_planner_and_waits_for_approval(saved, alice) -> None:
    calls_before = ModelCall.objects.count()
    run = template_run(version=saved, user=alice, values={"city": "Lyon"})
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL
    assert run.task == "Research the weather in Lyon, then write a short summary"
    assert run.template_version == saved and run.template_values == {"city": "Lyon"}
    assert run.template_trigger == Run.Trigger.FORM
    version = run.plan_versions.get()
    assert version.note == "from template Weather v1"
    assert "Paris" not in str(version.plan)
    assert ModelCall.objects.count() == calls_before  # no planner call
    assert run.steps.filter(step_id="synthesis").exists()
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert list(template_runs_for_user(saved.template, alice)) == [run]


def test_auto_approve_runs_at_once_and_the_options_apply(saved, alice) -> None:
    run = template_run(
        version=saved,
        user=alice,
        values={},
        options=RunOptions(task="ignored", auto_approve=True, budget_tokens=5000),
    )
    assert run.status == RunStatus.RUNNING and run.budget_tokens == 5000
    assert run.task.endswith("weather in Paris, then write a short summary")  # the default
    with pytest.raises(RunInputError, match="A token budget must be a positive"):
        template_run(
            version=saved, user=alice, values={}, options=RunOptions(task="", budget_tokens=0)
        )


def test_bad_values_are_refused_naming_the_parameter(saved, alice) -> None:
    with pytest.raises(ParameterError) as exc:
        template_run(version=saved, user=alice, values={"city": "a\nb", "country": "FR"})
    assert exc.value.problems == {
        "country": "this template has no such parameter; its parameters: city",
        "city": "it holds a line break or a control character: give one line",
    }
    assert not Run.objects.filter(template_version=saved).exists()


def test_save_refuses_a_bad_plan_and_an_empty_name(alice) -> None:
    with pytest.raises(PlanValidationError, match="the plan has no steps"):
        template_save(user=alice, name="Empty", task="t", plan={"goal": "", "steps": []})
    with pytest.raises(TemplateRefused, match="Give the template a name."):
        template_save(user=alice, name=" ", task="t", plan={"steps": []})
    assert not PlanTemplate.objects.exists()


def test_others_see_a_template_only_once_staff_share_it(saved, alice, make_user) -> None:
    bob = make_user("bob")
    template = saved.template
    assert list(template_list_for_user(bob)) == []
    with pytest.raises(Exception) as exc:
        template_get_for_user(bob, template.pk)
    assert exc.typename == "Http404"
    with pytest.raises(TemplateRefused, match="Only staff share templates"):
        template_share(template, alice, True)
    staff = make_user("staff")
    staff.is_staff = True
    staff.save()
    template_share(template, staff, True)
    assert template_get_for_user(bob, template.pk) == template
    assert template_get_by_name(bob, "Weather") == template
    # Bob runs it: his run is his, and Alice does not see it among hers.
    run = template_run(version=saved, user=bob, values={"city": "Oslo"})
    assert run.owner == bob
    assert list(template_runs_for_user(template, alice)) == []
    assert list(template_runs_for_user(template, bob)) == [run]
    # Saving under the same name makes Bob a template of his own, not a version of Alice's.
    mine = template_save(user=bob, name="Weather", task=saved.task, plan=saved.plan)
    assert mine.template != template and mine.template.owner == bob
    assert template_get_by_name(bob, "Weather") == mine.template


def test_adapt_asks_the_planner_for_a_revision_the_person_decides(saved, alice) -> None:
    from planner_ui.models import PlanProposal
    from planner_ui.services.proposals import proposal_make

    run = template_run(
        version=saved,
        user=alice,
        values={"city": "Lyon"},
        options=RunOptions(task="", auto_approve=True),
        adapt=True,
    )
    # Asked to adapt, it is never approved on its own: the revision waits for the person.
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL
    proposal = run.proposals.get()
    assert proposal.note == (
        "This plan comes from a template, filled in with these values: city = Lyon. Adapt its "
        "steps to these values where they need it, and keep the rest as it is."
    )
    proposal_make(proposal.pk)
    proposal.refresh_from_db()
    assert proposal.state == PlanProposal.State.READY, proposal.error
    assert run.plan_versions.count() == 1  # nothing adopted before the person accepts


def test_a_schedule_starts_due_runs_once_and_moves_on(saved, alice) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from planner_ui.services.templates import template_schedule_set, template_schedules_due

    template = template_schedule_set(saved.template, alice, "every 1 hour", {"city": "Rome"})
    assert template.schedule == "every 1 hour" and template.schedule_values == {"city": "Rome"}
    first = template.next_run_at
    assert template_schedules_due(first - timedelta(seconds=1)) == 0
    assert template_schedules_due(first) == 1
    # A second beat asking for the same moment finds it claimed: no duplicate.
    assert template_schedules_due(first) == 0
    template.refresh_from_db()
    assert template.next_run_at == first + timedelta(hours=1)
    run = Run.objects.get(template_version=saved)
    assert run.template_trigger == Run.Trigger.SCHEDULE and run.task.endswith(
        "in Rome, then write a short summary"
    )
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL  # a trigger approves nothing
    # Down for a day: one run now, not 24, and the next one an hour from now.
    later = first + timedelta(days=1, minutes=5)
    assert template_schedules_due(later) == 1
    template.refresh_from_db()
    assert template.next_run_at == later + timedelta(hours=1)
    # Cleared, it starts nothing.
    template_schedule_set(template, alice, "", {})
    assert template_schedules_due(timezone.now() + timedelta(days=30)) == 0


def test_a_schedule_is_checked_when_set_and_a_failure_is_kept(saved, alice, make_user) -> None:
    from datetime import timedelta

    from planner_ui.services.templates import template_schedule_set, template_schedules_due

    with pytest.raises(TemplateRefused, match='Write "every 30 minutes"'):
        template_schedule_set(saved.template, alice, "sometimes", {})
    with pytest.raises(ParameterError) as exc:
        template_schedule_set(saved.template, alice, "every 1 day", {"city": "a\nb"})
    assert list(exc.value.problems) == ["city"]
    with pytest.raises(TemplateRefused, match="Only the template's owner sets its schedule."):
        template_schedule_set(saved.template, make_user("bob"), "every 1 day", {})
    template = template_schedule_set(saved.template, alice, "every 1 day", {})
    # A later version no one can fill without a value: the schedule's run cannot start.
    template_save(user=alice, name="Weather", task="Weather in {city} and {sea}", plan=saved.plan)
    assert template_schedules_due(template.next_run_at + timedelta(seconds=1)) == 0
    template.refresh_from_db()
    assert "sea: a value is required" in template.schedule_error
    assert template.next_run_at is not None  # it tries again at its next time
