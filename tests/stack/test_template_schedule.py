"""A template on a schedule, through the real Celery beat: runs come on schedule, each waits
for approval, and a second beat, stopped and started again meanwhile, adds no duplicate."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from agentsite import embedded
from planner_ui.core.status import RunStatus
from planner_ui.models import PlanTemplate, Run
from planner_ui.services.templates import template_save, template_schedule_set
from tests.conftest import child_env, wait_until

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]

PLAN = {"steps": [{"id": "a", "title": "A", "instruction": "Weather in {city}", "role": "writer"}]}
EVERY_S = 5


def test_scheduled_runs_come_on_time_without_duplicates(celery_worker_process, make_user, tmp_path):
    owner = make_user("alice")
    saved = template_save(user=owner, name="Weather", task="Weather in {city}", plan=PLAN)
    template = template_schedule_set(
        saved.template, owner, f"every {EVERY_S} seconds", {"city": "Oslo"}
    )
    PlanTemplate.objects.filter(pk=template.pk).update(next_run_at=timezone.now())
    runs = Run.objects.filter(template_version=saved)

    # A second beat beside the worker's own: each due run is still started once.
    logs = settings.VAR_DIR / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = child_env(AGENTSITE_SCHEDULE_TICK_S="1")  # as the session worker's beat
    beat = embedded.start_beat(env=env, log_path=logs / "beat-schedule.log", cwd=tmp_path)
    try:
        wait_until(lambda: runs.count() >= 1, timeout=30, what="the first scheduled run")
        started = time.monotonic()
        # The second beat goes away and comes back, as after a restart.
        embedded.stop_processes([beat])
        beat = embedded.start_beat(env=env, log_path=logs / "beat-schedule.log", cwd=tmp_path)
        wait_until(lambda: runs.count() >= 3, timeout=40, what="two more scheduled runs")
        elapsed = time.monotonic() - started
    finally:
        embedded.stop_processes([beat])

    made = sorted(runs, key=lambda r: r.created_at)
    # Never more than one run per period: a duplicate would come a moment after another. A
    # run may start up to a beat's tick (1 s) late, or more on a loaded machine, and the next
    # on time: the gaps are about a period, and never near none.
    assert len(made) <= 2 + elapsed / EVERY_S
    gaps = [(b.created_at - a.created_at) for a, b in zip(made, made[1:], strict=False)]
    assert all(gap >= timedelta(seconds=EVERY_S / 2) for gap in gaps), gaps
    assert {r.template_trigger for r in made} == {Run.Trigger.SCHEDULE}
    assert {r.status for r in made} == {RunStatus.AWAITING_PLAN_APPROVAL}
    assert {r.task for r in made} == {"Weather in Oslo"}
