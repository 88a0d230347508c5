"""Heartbeats and leases: a live worker keeps what it holds, a silent one loses it, and a worker
that was taken over records nothing."""

from __future__ import annotations

import threading
import time

import pytest
from django.utils import timezone

from planner_ui.agents.executor import StepOutcome
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Run, Step
from planner_ui.selectors.workers import workers_alive
from planner_ui.services.leases import (
    lease_held,
    step_heartbeat,
    task_lease,
    worker_alive_beat,
)
from planner_ui.services.steps import step_finish
from planner_ui.stores.redis_store import redis_client, redis_key

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast(settings):
    settings.AGENTSITE_HEARTBEAT_S = 0.05
    client = redis_client()
    for key in client.scan_iter(match=redis_key("*")):
        client.delete(key)


def running_step(run: Run, step_id: str) -> Step:
    return Step.objects.create(
        run=run,
        step_id=step_id,
        title=step_id,
        instruction="x",
        role="writer",
        status=StepStatus.RUNNING,
        worker="w1",
        heartbeat_at=timezone.now(),
    )


@pytest.fixture
def running(make_user) -> Step:
    run = Run.objects.create(owner=make_user(), task="t", status=RunStatus.RUNNING)
    return running_step(run, "s")


def test_a_running_step_s_heartbeat_stays_fresh_while_its_worker_works(running):
    before = running.heartbeat_at
    with step_heartbeat(running.run_id, "s", "w1") as beat:
        time.sleep(0.3)
        running.refresh_from_db()
        assert running.heartbeat_at > before
    assert not beat.lost
    # Once the block is over, nothing beats for it any more.
    time.sleep(0.1)  # a beat under way when the block ended
    running.refresh_from_db()
    last = running.heartbeat_at
    time.sleep(0.3)
    running.refresh_from_db()
    assert running.heartbeat_at == last


def test_one_thread_keeps_the_heartbeats_of_every_step_a_process_runs(running):
    other = running_step(running.run, "t")
    threads = threading.active_count()
    with step_heartbeat(running.run_id, "s", "w1"), step_heartbeat(running.run_id, "t", "w1"):
        assert threading.active_count() <= threads + 1  # at most the process's one, once
        time.sleep(0.3)
        for step in (running, other):
            before = step.heartbeat_at
            step.refresh_from_db()
            assert step.heartbeat_at > before, step.step_id


def test_a_worker_that_was_taken_over_stops_beating(running):
    Step.objects.filter(pk=running.pk).update(worker="w2")  # another worker took it over
    with step_heartbeat(running.run_id, "s", "w1") as beat:
        time.sleep(0.3)
        assert beat.lost


def test_a_worker_that_was_taken_over_records_nothing(running):
    Step.objects.filter(pk=running.pk).update(worker="w2")
    step_finish(running.run_id, "s", outcome=StepOutcome("late answer"), worker="w1")
    running.refresh_from_db()
    assert running.status == StepStatus.RUNNING and running.output == ""
    step_finish(running.run_id, "s", outcome=StepOutcome("the answer"), worker="w2")
    running.refresh_from_db()
    assert running.status == StepStatus.SUCCEEDED and running.output == "the answer"


def test_a_lease_keeps_a_second_worker_out_until_it_is_released():
    with task_lease("plan", 7) as first:
        assert first and lease_held("plan", 7)
        time.sleep(0.2)  # refreshed meanwhile
        with task_lease("plan", 7) as second:
            assert not second
    assert not lease_held("plan", 7)
    with task_lease("plan", 7) as again:
        assert again


def test_workers_say_they_are_alive(settings):
    assert workers_alive() == []
    beat = worker_alive_beat("celery@machine-a")
    try:
        assert workers_alive() == ["celery@machine-a"]
    finally:
        beat.stop()
