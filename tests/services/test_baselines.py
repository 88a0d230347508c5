"""The single-agent baseline runs end to end, and the comparison reads both runs' figures."""

from __future__ import annotations

import pytest

from planner_ui.core.status import RunStatus
from planner_ui.selectors.compare import comparison
from planner_ui.services.baselines import baseline_create
from planner_ui.services.runs import run_approve_plan
from planner_ui.tools import tool_names

from .test_runs import drive, planned

pytestmark = pytest.mark.django_db

TASK = "Compute 1500 * 0.2 + 75, research tea and coffee, then write a short summary"


@pytest.fixture
def finished(make_user):
    run = planned(make_user(), TASK)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


def test_a_baseline_is_one_agent_with_every_tool_and_its_answer_is_the_result(finished):
    baseline = drive(baseline_create(finished, finished.owner))
    assert baseline.status == RunStatus.SUCCEEDED, baseline.error
    assert baseline.baseline_of == finished and baseline.task == finished.task
    (step,) = baseline.steps.all()
    assert (step.step_id, step.role, step.tools) == ("agent", "agent", tool_names())
    assert baseline.result == step.output and "375" in step.output
    assert set(baseline.calls.values_list("role", flat=True)) == {"agent"}
    assert not baseline.calls.filter(role="planner").exists()
    assert baseline.routes == finished.routes


def test_the_comparison_puts_both_runs_figures_side_by_side(finished):
    baseline = drive(baseline_create(finished, finished.owner))
    # From either run, the comparison is the original beside its baseline.
    for run in (finished, baseline):
        view = comparison(run)
        assert view["original"] == finished
        plan, agent = view["left"], view["right"]
        assert (plan.model_calls, agent.model_calls) == (finished.model_calls, baseline.model_calls)
        assert (plan.tokens_in, agent.tokens_in) == (finished.tokens_in, baseline.tokens_in)
        assert plan.steps == finished.steps.count() and agent.steps == 1
        assert view["ratios"]["model_calls"] == round(
            finished.model_calls / baseline.model_calls, 2
        )
        assert plan.active_s is not None and agent.active_s is not None


def test_a_baseline_of_a_baseline_is_another_baseline_of_the_original(finished):
    first = baseline_create(finished, finished.owner)
    second = baseline_create(first, finished.owner)
    assert second.baseline_of == finished
