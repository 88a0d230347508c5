"""Run and step services in-process with the offline provider. These tests are not
transactional, so on_commit never fires: nothing is enqueued, and each test drives the steps
itself, in the order the scheduler would."""

from __future__ import annotations

import pytest
from django.conf import settings

from planner_ui.core.errors import InvalidTransition
from planner_ui.core.plan import SYNTHESIS_STEP_ID
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import PlanVersion, Run, RunEvent, Step
from planner_ui.services.runs import RunInputError, run_approve_plan, run_create, run_plan
from planner_ui.services.steps import step_execute

pytestmark = pytest.mark.django_db


def drive(run: Run) -> Run:
    """Execute queued steps one by one, and make re-plans, as workers would, until nothing is
    left to do. (The tasks themselves are not sent: these tests run inside a transaction that
    never commits.)"""
    from planner_ui.models import PlanProposal
    from planner_ui.services.replans import replan_make

    for _ in range(100):
        run.refresh_from_db()
        waiting_person = run.proposals.filter(
            kind=PlanProposal.Kind.REPLAN, state=PlanProposal.State.READY
        ).exists()
        if run.replanning and not run.is_finished and not waiting_person:
            failed = run.steps.filter(status=StepStatus.FAILED).last()
            replan_make(run.pk, failed.step_id if failed else "")
            continue
        queued = list(Step.objects.filter(run=run, status=StepStatus.QUEUED))
        if not queued:
            break
        for step in queued:
            step_execute(run.pk, step.step_id, "test-worker")
    run.refresh_from_db()
    return run


def planned(user, task: str, **kwargs) -> Run:
    run = run_create(owner=user, options=RunOptions(task=task, **kwargs))
    run_plan(run.pk)
    run.refresh_from_db()
    return run


def test_run_create_refuses_empty_and_oversized_tasks(make_user):
    user = make_user()
    with pytest.raises(RunInputError, match="Describe the task: it is empty."):
        run_create(owner=user, options=RunOptions(task="   "))
    limit = settings.AGENTSITE_MAX_TASK_CHARS
    with pytest.raises(RunInputError) as exc:
        run_create(owner=user, options=RunOptions(task="x" * (limit + 1)))
    assert str(exc.value) == (
        f"The task is {limit + 1} characters long; at most {limit} are allowed."
    )
    assert Run.objects.count() == 0


def test_planning_stores_version_one_and_steps_with_a_synthesizer(make_user):
    run = planned(make_user(), "Compare Python and Go for writing a command-line tool")
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL
    assert run.planner_model == "offline:offline-v1"
    version = run.plan_versions.get()
    assert (version.number, version.author) == (1, PlanVersion.Author.PLANNER)
    steps = list(run.steps.all())
    plan_ids = [s["id"] for s in version.plan["steps"]]
    assert [s.step_id for s in steps] == plan_ids + [SYNTHESIS_STEP_ID]
    synthesis = steps[-1]
    assert synthesis.role == "synthesizer"
    depended_on = {d for s in steps[:-1] for d in s.depends_on}
    assert set(synthesis.depends_on) == {i for i in plan_ids if i not in depended_on}
    assert all(s.status == StepStatus.PENDING for s in steps)
    types = list(run.events.values_list("type", flat=True))
    assert types == ["run.status", "model.call", "plan.version", "run.status"]
    assert run.tokens_in > 0 and run.model_calls == 1
    (call,) = run.calls.all()
    assert (call.role, call.step_id, call.label) == ("planner", "", "offline:offline-v1")
    assert (call.input_tokens, call.output_tokens) == (run.tokens_in, run.tokens_out)


def test_plan_versions_are_immutable(make_user):
    run = planned(make_user(), "Research tea and coffee")
    version = run.plan_versions.get()
    version.note = "changed"
    with pytest.raises(ValueError, match="plan versions are immutable"):
        version.save()


def test_approve_dispatches_only_ready_steps_and_the_run_completes(make_user):
    run = planned(make_user(), "Compare Python and Go for writing a command-line tool")
    run_approve_plan(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    assert run.approved_plan == run.plan_versions.get()
    queued = set(run.steps.filter(status=StepStatus.QUEUED).values_list("step_id", flat=True))
    roots = {s.step_id for s in run.steps.all() if not s.depends_on}
    assert queued == roots and len(roots) >= 2
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    steps = list(run.steps.all())
    assert all(s.status == StepStatus.SUCCEEDED and s.attempts == 1 for s in steps)
    assert run.result == run.steps.get(step_id=SYNTHESIS_STEP_ID).output
    assert "Python" in run.result and "Go" in run.result
    planner_in = run.tokens_in - sum(s.tokens_in for s in steps)
    assert planner_in > 0  # the planner's tokens are counted once, beside the steps'
    seqs = list(run.events.values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))


def test_a_step_runs_only_after_its_dependencies(make_user):
    run = planned(make_user(), "Research the history of tea, then write a short summary")
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    steps = {s.step_id: s for s in run.steps.all()}
    for step in steps.values():
        for dep in step.depends_on:
            assert steps[dep].finished_at <= step.started_at
    # Each start says how long its claim waited for the database (here: no other writer).
    for started in run.events.filter(type="step.started"):
        assert 0 <= started.payload["waited_ms"] < 1000, started.payload


def test_redelivered_task_of_a_finished_step_changes_nothing(make_user):
    run = planned(make_user(), "Research tea and coffee")
    run_approve_plan(run.pk)
    run = drive(run)
    step = run.steps.first()
    events_before = run.events.count()
    step_execute(run.pk, step.step_id, "another-worker", redelivered=True)
    step.refresh_from_db()
    assert (step.attempts, step.worker) == (1, "test-worker")
    assert run.events.count() == events_before


def test_approving_twice_is_refused_with_a_clear_message(make_user):
    run = planned(make_user(), "Research tea and coffee")
    run_approve_plan(run.pk)
    with pytest.raises(InvalidTransition) as exc:
        run_approve_plan(run.pk)
    assert str(exc.value) == "This run is running, so its plan cannot be approved now."


def test_without_re_planning_a_failed_step_skips_what_is_left_and_fails_the_run(
    make_user, settings
):
    # One model call is not enough for a step that calls a tool and then answers.
    settings.AGENTSITE_MAX_STEP_ITERATIONS = 1
    run = planned(
        make_user(),
        "Compute 1234 * 5678 and then write a short report about it",
        replan_mode="off",
    )
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.FAILED
    failed = run.steps.get(status=StepStatus.FAILED)
    assert failed.error == "the step reached its cap of 1 model calls without a final answer"
    skipped = run.steps.filter(status=StepStatus.SKIPPED)
    assert skipped.exists()
    assert all(s.error == f"not run because step '{failed.step_id}' failed" for s in skipped)
    assert f"step '{failed.step_id}' failed" in run.error
    assert RunEvent.objects.filter(run=run, type="step.failed", step_id=failed.step_id).exists()


def test_with_re_planning_the_offline_planner_routes_around_a_failed_step(make_user, settings):
    settings.AGENTSITE_MAX_STEP_ITERATIONS = 1
    run = planned(make_user(), "Compute 1234 * 5678 and then write a short report about it")
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.replans == 1
    v2 = run.plan_versions.get(number=2)
    assert v2.author == PlanVersion.Author.REPLANNER
    dropped = run.steps.get(status=StepStatus.SKIPPED)
    assert dropped.error.startswith("failed: the step reached its cap of 1 model calls")
    assert dropped.step_id not in {s["id"] for s in v2.plan["steps"]}


def test_a_provider_that_cannot_be_built_fails_the_step_with_its_reason(make_user, settings):
    run = planned(make_user(), "Research tea and coffee")
    # The executors' route names Anthropic, whose key is gone by the time they run.
    executors = {part: "anthropic:claude-sonnet-5-5" for part in run.routes if part != "planner"}
    Run.objects.filter(pk=run.pk).update(routes={**run.routes, **executors})
    settings.ANTHROPIC_API_KEY = ""
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.FAILED
    failed = run.steps.filter(status=StepStatus.FAILED)
    assert failed.exists()
    assert all(s.error.startswith("No Anthropic API key: set ANTHROPIC_API_KEY") for s in failed)
    assert not run.steps.filter(status=StepStatus.RUNNING).exists()
