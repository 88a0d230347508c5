"""The sweep a worker runs on its own timer: with nothing else running, a step whose worker went
silent is handed out again, and the fleet's last sweep is on record."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Run, Step, Sweep
from planner_ui.services.sweeper import sweeper_start
from tests.conftest import wait_until
from tests.services.test_sweep import clean_redis, queued  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_worker_s_sweeper_hands_a_silent_step_out_again(make_user, settings):
    settings.AGENTSITE_SWEEP_S = 0.2
    run = Run.objects.create(owner=make_user(), task="t", status=RunStatus.RUNNING)
    Step.objects.create(
        run=run, step_id="lost", title="lost", instruction="x", role="writer",
        status=StepStatus.RUNNING, worker="w1",
        heartbeat_at=timezone.now() - timedelta(seconds=settings.AGENTSITE_STEP_LEASE_S + 1),
    )  # fmt: skip
    sweeper = sweeper_start("w2@host")
    try:
        wait_until(queued, timeout=10, what="the step to be handed out again")
    finally:
        sweeper.stop()
    assert queued() == [("execute_step", (run.pk, "lost"), {"takeover": True})]
    assert Sweep.objects.get().swept_by == "w2@host"


def test_a_worker_s_sweeper_starts_a_template_s_scheduled_run(make_user, settings):
    """With no beat at all (compose, `make run`): the schedule still fires, from a worker."""
    from planner_ui.models import PlanTemplate
    from planner_ui.services.templates import template_save, template_schedule_set

    settings.AGENTSITE_SWEEP_S = 0.2
    owner = make_user()
    plan = {"steps": [{"id": "a", "title": "A", "instruction": "Hi {who}", "role": "writer"}]}
    saved = template_save(user=owner, name="Hi", task="Hi {who}", plan=plan)
    template_schedule_set(saved.template, owner, "every 1 hour", {"who": "Ann"})
    PlanTemplate.objects.update(next_run_at=timezone.now())
    sweeper = sweeper_start("w2@host")
    try:
        wait_until(
            lambda: Run.objects.filter(template_version=saved).exists(),
            timeout=10,
            what="the scheduled run",
        )
    finally:
        sweeper.stop()
    run = Run.objects.get(template_version=saved)
    assert (run.task, run.template_trigger) == ("Hi Ann", Run.Trigger.SCHEDULE)
