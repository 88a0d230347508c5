"""What `manage.py evaluate` prints and decides, from an experiment run in-process: the table's
figures and ratios are the stored runs', and a threshold is missed with the reason."""

from __future__ import annotations

from decimal import Decimal

import pytest

from planner_ui.core.evaluation import arm_parse, shipped_suites, suite_load
from planner_ui.management.commands.evaluate import (
    progress_line,
    results_table,
    thresholds_missed,
)
from planner_ui.models import Run
from planner_ui.selectors.evaluations import experiment_results
from planner_ui.services.evaluations import experiment_create
from tests.services.test_evaluations import run_to_the_end

pytestmark = pytest.mark.django_db


@pytest.fixture
def priced_results(alice, settings):
    settings.AGENTSITE_PRICES = {"offline:*": {"input": 1000, "output": 1000}}
    suite = suite_load(shipped_suites()["sequential"])
    experiment = experiment_create(alice, suite, [arm_parse("agent"), arm_parse("plan")])
    assert progress_line(experiment) == (
        f"[....................] 0/8 runs checked, 0 running (experiment {experiment.pk}, running)"
    )
    experiment = run_to_the_end(experiment)
    assert progress_line(experiment).startswith("[####################] 8/8 runs checked")
    return experiment_results(experiment)


def test_the_table_shows_the_runs_figures_and_ratios(priced_results):
    table = results_table(priced_results)
    lines = table.splitlines()
    assert lines[0] == (
        f"Experiment {priced_results.experiment.pk} on suite sequential: finished, 8/8 runs "
        "checked, each task 1×."
    )
    agent_runs = Run.objects.filter(experiment_slot__arm="agent")
    plan_runs = Run.objects.filter(experiment_slot__arm="plan")
    (agent_row,) = [line for line in lines if line.startswith("agent ")]
    assert agent_row.split()[4] == str(sum(r.model_calls for r in agent_runs))
    (ratio_row,) = [line for line in lines if line.startswith("plan ") and "×" in line]
    cost = lambda runs: sum((r.cost_usd for r in runs), Decimal(0)) / 4  # noqa: E731
    assert ratio_row.split()[4] == f"{float(cost(plan_runs)) / float(cost(agent_runs)):.2f}×"
    assert "arithmetic-chain" in table and "✗" in table


def test_thresholds_are_missed_with_the_reason(priced_results):
    agent, plan = priced_results.arms
    total = agent.cost_usd + plan.cost_usd
    # Offline, the single agent writes total.txt without the total and never reads back
    # what it wrote: 1 of 4; the plan misses only the arithmetic chain.
    assert (agent.successes, plan.successes) == (1, 3)
    assert thresholds_missed(priced_results, 0.25, total) == []
    assert thresholds_missed(priced_results, 0.5, None) == ["arm agent succeeded 25%, below 50%"]
    (missed,) = thresholds_missed(priced_results, None, Decimal("0.01"))
    assert missed.startswith("the experiment cost $") and missed.endswith("above the $0.01 set")
