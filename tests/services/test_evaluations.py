"""Experiments run their slots as ordinary runs, within the concurrency limit, check each run
as it ends, stop at the budget, and count every slot once; the results are the runs' own
figures. Runs are driven in-process here as the workers would (see test_runs.drive)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.http import Http404
from django.urls import reverse

from planner_ui.core.evaluation import EvaluationError, arm_parse, shipped_suites, suite_load
from planner_ui.core.status import RunStatus
from planner_ui.models import Experiment, ExperimentRun, Run, Step
from planner_ui.selectors.evaluations import experiment_get_for_user, experiment_results
from planner_ui.services.evaluations import experiment_advance, experiment_create, suite_save
from planner_ui.services.runs import run_plan

from .test_runs import drive

pytestmark = pytest.mark.django_db


def run_to_the_end(experiment: Experiment, watch=None) -> Experiment:
    """Advance, run what started, and again, as the end of each run would."""
    for _ in range(100):
        experiment = experiment_advance(experiment.pk)
        if watch:
            watch(experiment)
        if experiment.is_finished:
            return experiment
        for slot in experiment.slots.filter(passed__isnull=True, run__isnull=False):
            if slot.run.status == RunStatus.PLANNING:
                run_plan(slot.run_id)
            drive(slot.run)
    raise AssertionError("the experiment did not finish")


def test_an_experiment_runs_every_slot_once_within_its_concurrency(alice):
    suite = suite_load(shipped_suites()["parallel"])
    arms = [arm_parse("agent"), arm_parse("plan")]
    experiment = experiment_create(alice, suite, arms, repeat=2, concurrency=3)
    assert experiment.slots.count() == 2 * len(suite.tasks) * 2
    going: list[int] = []

    def watch(exp):
        going.append(
            ExperimentRun.objects.filter(experiment=exp, run__isnull=False)
            .exclude(run__status__in=[RunStatus.SUCCEEDED, RunStatus.FAILED])
            .count()
        )

    experiment = run_to_the_end(experiment, watch)
    assert experiment.status == Experiment.Status.FINISHED
    assert max(going) == 3
    slots = list(experiment.slots.select_related("run"))
    assert all(s.run is not None and s.passed is not None for s in slots)
    assert Run.objects.filter(owner=alice).count() == len(slots)
    agent_runs = [s.run for s in slots if s.arm == "agent"]
    assert all(r.steps.get().role == "agent" and r.baseline_of is None for r in agent_runs)
    assert all(r.tool_policy == "dry_run" for r in (s.run for s in slots))
    # Advancing a finished experiment changes nothing.
    experiment_advance(experiment.pk)
    assert Run.objects.filter(owner=alice).count() == len(slots)


def test_the_results_are_the_runs_own_figures_and_the_checks_say_why(alice):
    suite = suite_load(shipped_suites()["parallel"])
    experiment = experiment_create(alice, suite, [arm_parse("agent"), arm_parse("plan")])
    experiment = run_to_the_end(experiment)
    results = experiment_results(experiment)
    assert (results.checked, results.total) == (8, 8)
    for figures in results.arms:
        runs = Run.objects.filter(
            experiment_slot__experiment=experiment, experiment_slot__arm=figures.arm
        )
        assert figures.runs == runs.count() == 4
        assert figures.model_calls == sum(r.model_calls for r in runs)
        assert figures.tokens_in == sum(r.tokens_in for r in runs)
        assert figures.cost_usd == sum((r.cost_usd for r in runs), Decimal(0))
        assert figures.successes == experiment.slots.filter(arm=figures.arm, passed=True).count()
    agent, plan = results.arms
    # One step per single-agent run: its critical path is that step.
    agent_steps = Step.objects.filter(run__experiment_slot__arm="agent")
    assert agent.critical_path_s == pytest.approx(sum(s.duration_s for s in agent_steps))
    assert 0 < plan.critical_path_s
    assert plan.ratios["model_calls"] == round(
        (plan.model_calls / plan.runs) / (agent.model_calls / agent.runs), 2
    )
    # The offline planner writes one file per clause: ants.md is missing in both arms.
    (two_notes,) = [row for row in results.tasks if row.task.id == "two-notes"]
    for _arm, (slot,) in two_notes.cells:
        assert slot.passed is False
        assert slot.checks[1][1].startswith("file ants.md does not exist")
    (products,) = [row for row in results.tasks if row.task.id == "three-products"]
    assert all(slot.passed for _arm, (slot,) in products.cells)
    exported = results.as_dict()
    assert exported["arms"][1]["model_calls"] == plan.model_calls
    assert exported["tasks"][0]["arms"]["plan"][0]["run"] == products.cells[1][1][0].run_id


def test_an_experiment_stops_at_its_budget_and_counts_only_what_ended(alice):
    suite = suite_load(shipped_suites()["sequential"])
    experiment = experiment_create(
        alice, suite, [arm_parse("plan")], concurrency=1, budget_tokens=1
    )
    experiment = run_to_the_end(experiment)
    assert experiment.status == Experiment.Status.STOPPED
    assert experiment.stop_reason.startswith("Budget spent: ")
    started = experiment.slots.filter(run__isnull=False)
    assert started.count() == 1  # the first run spent the budget; nothing else started
    results = experiment_results(experiment)
    assert (results.checked, results.total) == (1, len(suite.tasks))


def test_experiment_options_are_checked(alice):
    suite = suite_load(shipped_suites()["parallel"])
    with pytest.raises(EvaluationError, match="Repeat each task 1 to 20 times."):
        experiment_create(alice, suite, [arm_parse("plan")], repeat=0)
    with pytest.raises(EvaluationError, match="Arm x: "):
        experiment_create(alice, suite, [arm_parse("x=plan,planner=anthropic:claude-haiku-5-5")])
    with pytest.raises(EvaluationError, match="Budget in USD: Decimal input should have no more"):
        experiment_create(alice, suite, [arm_parse("plan")], budget_usd=Decimal("0.00001"))
    with pytest.raises(EvaluationError, match="Budget in USD: "):
        experiment_create(alice, suite, [arm_parse("plan")], budget_usd=Decimal("1e20"))
    assert not Experiment.objects.exists()


def test_suites_are_saved_under_their_name_once_per_person(alice, make_user):
    text = shipped_suites()["parallel"]
    saved = suite_save(alice, text)
    assert (saved.name, saved.content) == ("parallel", text)
    with pytest.raises(EvaluationError, match="You have a suite named 'parallel' already"):
        suite_save(alice, text)
    suite_save(make_user("bob"), text)  # another person's suite may share the name
    with pytest.raises(EvaluationError, match="not valid YAML"):
        suite_save(alice, "name: [", saved)


def test_another_persons_experiment_is_not_found(alice, make_user):
    suite = suite_load(shipped_suites()["parallel"])
    experiment = experiment_create(alice, suite, [arm_parse("plan")])
    with pytest.raises(Http404):
        experiment_get_for_user(make_user("bob"), experiment.pk)


def test_each_run_gets_what_is_left_of_the_experiments_budget(alice):
    suite = suite_load(shipped_suites()["sequential"])
    experiment = experiment_create(
        alice, suite, [arm_parse("plan")], concurrency=1, budget_tokens=10**6
    )
    experiment = run_to_the_end(experiment)
    assert experiment.status == Experiment.Status.FINISHED
    runs = list(Run.objects.filter(owner=alice).order_by("pk"))
    assert runs[0].budget_tokens == 10**6
    spent = 0
    for run in runs:
        assert run.budget_tokens == 10**6 - spent
        spent += run.tokens_in + run.tokens_out


def test_a_paused_experiment_starts_nothing_and_pauses_its_runs_until_resumed(alice):
    from planner_ui.core.errors import InvalidTransition
    from planner_ui.services.evaluations import experiment_pause, experiment_resume

    suite = suite_load(shipped_suites()["parallel"])
    experiment = experiment_create(alice, suite, [arm_parse("agent")], concurrency=2)
    experiment_advance(experiment.pk)  # two single-agent runs start, running at once
    going = list(Run.objects.filter(owner=alice))
    assert len(going) == 2
    experiment_pause(experiment.pk, alice)
    assert all(run.paused_at for run in Run.objects.filter(owner=alice))
    with pytest.raises(InvalidTransition, match="This experiment is paused already"):
        experiment_pause(experiment.pk, alice)
    drive(going[0])  # its step was queued before the pause: it carries on to its end
    experiment_advance(experiment.pk)
    assert experiment.slots.filter(passed__isnull=False).count() == 1
    assert Run.objects.filter(owner=alice).count() == 2  # the freed slot waits
    experiment_resume(experiment.pk, alice)
    assert Run.objects.get(pk=going[1].pk).paused_at is None
    experiment = run_to_the_end(experiment)
    assert experiment.status == Experiment.Status.FINISHED
    assert experiment.slots.filter(passed__isnull=False).count() == len(suite.tasks)
    with pytest.raises(InvalidTransition, match="This experiment is finished and not paused"):
        experiment_resume(experiment.pk, alice)


def test_with_priced_models_the_figures_and_the_budget_are_in_dollars(alice, settings):
    # The offline model, priced as if it were a paid one: $1 per thousand tokens.
    settings.AGENTSITE_PRICES = {"offline:*": {"input": 1000, "output": 1000}}
    suite = suite_load(shipped_suites()["parallel"])
    experiment = run_to_the_end(
        experiment_create(alice, suite, [arm_parse("agent"), arm_parse("plan")])
    )
    results = experiment_results(experiment)
    agent, plan = results.arms
    assert agent.cost_usd > 0 and plan.cost_usd > agent.cost_usd
    assert plan.ratios["cost_usd"] == round(
        float(plan.cost_usd / plan.runs) / float(agent.cost_usd / agent.runs), 2
    )
    from planner_ui.selectors.evaluations import results_plots

    plot = results_plots(results)["cost_plot"]
    assert plot.x_label == "cost per run (USD)"
    assert plot.points[1].x > plot.points[0].x

    budget = (agent.cost_usd / agent.runs).quantize(Decimal("0.0001"))  # about one run
    stopped = run_to_the_end(
        experiment_create(alice, suite, [arm_parse("agent")], concurrency=1, budget_usd=budget)
    )
    assert stopped.status == Experiment.Status.STOPPED
    assert stopped.stop_reason.startswith("Budget spent: $")
    assert 1 <= stopped.slots.filter(run__isnull=False).count() < len(suite.tasks)


def test_checks_read_exactly_what_a_scripted_model_answered(alice):
    from planner_ui.providers.scripted import script

    suite = suite_load(
        "name: exact\ntasks:\n  - id: answer\n    task: What is six times seven?\n"
        "    checks: [{type: number, value: 42}]\n"
    )
    script("right").text("Six times seven is 42.")
    script("wrong").text("Six times seven is 48.")
    arms = [
        arm_parse("right=agent,executor=scripted:right"),
        arm_parse("wrong=agent,executor=scripted:wrong"),
    ]
    experiment = run_to_the_end(experiment_create(alice, suite, arms))
    right, wrong = experiment.slots.order_by("arm")
    assert (right.arm, right.passed, right.run.result) == ("right", True, "Six times seven is 42.")
    assert (wrong.arm, wrong.passed) == ("wrong", False)
    assert wrong.checks == [[False, "the deliverable has no 42; it has 48"]]


def test_pausing_an_experiment_holds_the_runs_still_planning(alice):
    from planner_ui.services.evaluations import experiment_pause, experiment_resume

    suite = suite_load(shipped_suites()["parallel"])
    experiment = experiment_create(alice, suite, [arm_parse("plan")], concurrency=2)
    experiment_advance(experiment.pk)
    planning = list(Run.objects.filter(owner=alice))
    assert [run.status for run in planning] == [RunStatus.PLANNING] * 2
    experiment_pause(experiment.pk, alice)
    for run in planning:
        run_plan(run.pk)  # the planners' tasks were sent before the pause
        run.refresh_from_db()
        assert run.paused_at is not None and run.status == RunStatus.RUNNING
        assert not run.steps.exclude(status="pending").exists()
    experiment_resume(experiment.pk, alice)
    assert all(run.steps.filter(status="queued").exists() for run in planning)
    experiment = run_to_the_end(experiment)
    assert experiment.status == Experiment.Status.FINISHED
    assert experiment.slots.filter(passed__isnull=False).count() == len(suite.tasks)


def test_a_counted_run_retried_later_is_checked_again_and_still_counts_once(alice, client):
    from planner_ui.providers.scripted import script
    from planner_ui.services.evaluations import experiments_to_advance
    from planner_ui.services.retries import step_retry

    suite = suite_load(
        "name: exact\ntasks:\n  - id: answer\n    task: What is six times seven?\n"
        "    checks: [{type: number, value: 42}]\n"
    )
    script("p").plan(
        {
            "goal": "Multiply",
            "steps": [
                {
                    "id": "multiply",
                    "title": "Multiply",
                    "instruction": "Multiply six by seven.",
                    "role": "coder",
                    "tools": [],
                    "depends_on": [],
                }
            ],
        }
    )
    script("e").text("48").text("42")  # wrong the first time, right when retried
    script("s").text("Six times seven is 48.").text("Six times seven is 42.")
    arm = arm_parse("scripted=plan,planner=scripted:p,executor=scripted:e,synthesizer=scripted:s")
    experiment = run_to_the_end(experiment_create(alice, suite, [arm]))
    assert experiment.status == Experiment.Status.FINISHED
    (slot,) = experiment.slots.select_related("run")
    assert (slot.passed, slot.rechecks) == (False, 0)
    first_end = slot.run.finished_at
    assert slot.checked_end == first_end

    # Advancing again changes nothing: that end was checked, and the sweep leaves it alone.
    assert experiments_to_advance() == []
    experiment_advance(experiment.pk)
    slot.refresh_from_db()
    assert (slot.passed, slot.rechecks) == (False, 0)

    step_retry(run_id=slot.run_id, step_id="multiply", user=alice)
    run = drive(slot.run)
    assert run.status == RunStatus.SUCCEEDED and run.result == "Six times seven is 42."
    # Its end asks the experiment to advance; were that message lost, the sweep would.
    assert experiments_to_advance() == [experiment.pk]
    experiment = experiment_advance(experiment.pk)
    assert experiments_to_advance() == []
    slot.refresh_from_db()
    assert (slot.passed, slot.rechecks) == (True, 1)
    assert slot.checked_end == run.finished_at != first_end
    assert slot.checks == [[True, "the deliverable has 42"]]
    assert experiment.status == Experiment.Status.FINISHED

    results = experiment_results(experiment)
    (figures,) = results.arms
    assert (results.checked, results.total) == (1, 1)
    assert (figures.runs, figures.successes) == (1, 1)
    # The slot's figures are its run's, the retried calls included.
    assert figures.model_calls == run.model_calls == 5
    assert results.as_dict()["tasks"][0]["arms"]["scripted"][0]["rechecks"] == 1
    client.force_login(alice)
    page = client.get(reverse("experiment_detail", args=[experiment.pk])).content.decode()
    assert 'class="rechecked"' in page and "re-checked" in page


def test_an_experiments_runs_are_planned_without_past_plans(alice):
    # Its repetitions are measured against each other: none may learn from an earlier one.
    suite = suite_load(shipped_suites()["parallel"])
    experiment = experiment_create(alice, suite, [arm_parse("plan")], repeat=2, concurrency=1)
    experiment = run_to_the_end(experiment)
    runs = [s.run for s in experiment.slots.select_related("run")]
    assert len(runs) == 2 * len(suite.tasks)
    assert all(r.status == RunStatus.SUCCEEDED for r in runs)
    assert all(r.plan_examples == [] for r in runs)
