"""The comparison's time figures are active time: a retry minutes after a run finished adds the
retried work, not the minutes in between."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F

from planner_ui.core.status import RunStatus
from planner_ui.models import ModelCall, Run, RunEvent
from planner_ui.selectors.compare import comparison
from planner_ui.selectors.timeline import run_timing
from planner_ui.selectors.usage import run_usage
from planner_ui.services.baselines import baseline_create
from planner_ui.services.retries import step_retry
from planner_ui.services.runs import run_approve_plan
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

TASK = "Compute 1500 * 0.2 + 75, research tea and coffee, then write a short summary"
IDLE = timedelta(minutes=3)


def _finished_three_minutes_ago(run: Run) -> None:
    """Move everything the run did so far three minutes into the past, as if a person came back
    to it now: the stamps the timing reads are the events', the calls' and the run's."""
    RunEvent.objects.filter(run=run).update(created_at=F("created_at") - IDLE)
    ModelCall.objects.filter(run=run).update(created_at=F("created_at") - IDLE)
    Run.objects.filter(pk=run.pk).update(
        created_at=F("created_at") - IDLE,
        started_at=F("started_at") - IDLE,
        finished_at=F("finished_at") - IDLE,
    )


@pytest.fixture
def retried(make_user) -> Run:
    run = planned(make_user(), TASK)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    _finished_three_minutes_ago(run)
    step_retry(run_id=run.pk, step_id="synthesis", user=run.owner)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


def test_a_retry_after_an_idle_gap_counts_the_work_not_the_gap(retried):
    timing = run_timing(retried)

    assert timing.active_s < 30  # seconds of work, offline, whatever the machine
    assert timing.elapsed_s > IDLE.total_seconds()
    idle = [gap for gap in timing.gaps if gap.reason == "idle"]
    assert len(idle) == 1 and idle[0].seconds > IDLE.total_seconds() - 30
    usage = run_usage(retried)
    assert usage.active_s == round(timing.active_s, 3)
    assert [gap.reason for gap in usage.gaps] == ["waiting for approval", "idle"]


def test_the_baseline_ratio_after_a_retry_divides_active_times(retried):
    baseline = drive(baseline_create(retried, retried.owner))
    assert baseline.status == RunStatus.SUCCEEDED, baseline.error

    view = comparison(retried)

    plan, agent = view["left"], view["right"]
    assert plan.active_s == run_timing(retried).active_s < 30
    assert agent.active_s == run_timing(baseline).active_s
    assert view["ratios"]["active_s"] == round(plan.active_s / agent.active_s, 2)
    # Before, the three idle minutes made the plan's side minutes long: a ratio in the
    # thousands next to a baseline of a fraction of a second.
    assert view["ratios"]["active_s"] < 100
