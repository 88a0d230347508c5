"""`manage.py evaluate` runs a shipped suite on the real worker, prints figures whose ratios
are those of the stored runs, and exits 1 when a threshold is missed."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from planner_ui.models import Experiment, Run
from tests.conftest import child_env


def evaluate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "evaluate", *args],
        cwd=settings.BASE_DIR,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def per_run(experiment: Experiment, arm: str) -> dict[str, float]:
    runs = list(
        Run.objects.filter(experiment_slot__experiment=experiment, experiment_slot__arm=arm)
    )
    n = len(runs)
    return {
        "model_calls": sum(r.model_calls for r in runs) / n,
        "tokens": sum(r.tokens_in + r.tokens_out for r in runs) / n,
        "successes": experiment.slots.filter(arm=arm, passed=True).count(),
        "runs": n,
    }


@pytest.mark.stack
@pytest.mark.django_db(transaction=True)
def test_the_parallel_suite_with_the_offline_model_gives_the_stored_runs_ratios(
    celery_worker_process, make_user
):
    make_user("demo")
    result = evaluate("parallel", "--json", "--min-success", "0.5", "--concurrency", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "runs checked" in result.stderr  # the progress line
    report = json.loads(result.stdout)
    experiment = Experiment.objects.get(pk=report["experiment"])
    assert experiment.status == Experiment.Status.FINISHED
    assert (report["checked"], report["total"]) == (8, 8)
    agent, plan = (per_run(experiment, arm) for arm in ("agent", "plan"))
    agent_json, plan_json = report["arms"]
    assert (agent_json["arm"], plan_json["arm"]) == ("agent", "plan")
    assert plan_json["ratios"]["model_calls"] == round(
        plan["model_calls"] / agent["model_calls"], 2
    )
    assert plan_json["ratios"]["tokens"] == round(plan["tokens"] / agent["tokens"], 2)
    assert plan_json["successes"] == plan["successes"] and plan_json["runs"] == plan["runs"] == 4
    # The offline model passes every task but the one its note says it cannot.
    for arm in report["arms"]:
        assert arm["successes"] == 3, report["tasks"]
    assert Decimal(agent_json["cost_usd"]) == sum(
        (r.cost_usd for r in Run.objects.filter(experiment_slot__arm="agent")), Decimal(0)
    )
    (notes,) = [t for t in report["tasks"] if t["id"] == "two-notes"]
    assert notes["arms"]["plan"][0]["passed"] is False
    # One judge check in the suite: one judge call per arm, reported apart.
    assert report["judge"] == "offline:offline-v1"
    assert [arm["judging"]["model_calls"] for arm in report["arms"]] == [1, 1]


@pytest.mark.stack
@pytest.mark.django_db(transaction=True)
def test_a_threshold_above_what_was_reached_exits_1_with_the_table(
    celery_worker_process, make_user
):
    make_user("demo")
    result = evaluate("parallel", "--min-success", "0.9", "--concurrency", "4")
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "Threshold missed: arm agent succeeded 75%, below 90%" in out
    assert "Threshold missed: arm plan succeeded 75%, below 90%" in out
    experiment = Experiment.objects.get()
    agent, plan = (per_run(experiment, arm) for arm in ("agent", "plan"))
    (ratio_line,) = [line for line in out.splitlines() if line.startswith("plan ") and "×" in line]
    calls_ratio = f"{plan['model_calls'] / agent['model_calls']:.2f}×"
    assert ratio_line.split()[:3] == ["plan", "1.00×", calls_ratio], out
    assert "Judging by offline:offline-v1, apart from the figures above:" in out


@pytest.mark.django_db
def test_an_unknown_suite_or_arm_is_refused_before_anything_runs():
    with pytest.raises(CommandError, match="No suite 'nope': give a file, one of your suites"):
        call_command("evaluate", "nope")
    with pytest.raises(CommandError, match="Arm 'robot': write plan, agent"):
        call_command("evaluate", "parallel", "--arms", "robot")
    assert not Experiment.objects.exists()
