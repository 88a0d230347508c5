"""The sweep hands out again what lost its worker or its message, once per period, and leaves
alone what a live worker holds. Its messages are read back from the real queue in Redis."""

from __future__ import annotations

import ast
import json
import threading
import time
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import PlanProposal, PlanVersion, Run, Step, Sweep
from planner_ui.services.leases import task_lease
from planner_ui.services.sweep import sweep, sweep_claim
from planner_ui.stores.redis_store import redis_client, redis_key

pytestmark = pytest.mark.django_db


def queued() -> list[tuple[str, tuple, dict]]:
    """The task messages waiting in Celery's queue: (task, args, kwargs)."""
    found = []
    for raw in redis.Redis.from_url(settings.REDIS_URL).lrange("agentsite", 0, -1):
        headers = json.loads(raw)["headers"]
        found.append(
            (
                headers["task"].rsplit(".", 1)[-1],
                ast.literal_eval(headers["argsrepr"]),
                ast.literal_eval(headers["kwargsrepr"]),
            )
        )
    return sorted(found, key=repr)


@pytest.fixture(autouse=True)
def clean_redis():
    client = redis_client()
    for key in client.scan_iter(match=redis_key("*")):
        client.delete(key)
    redis.Redis.from_url(settings.REDIS_URL).delete("agentsite")
    yield
    redis.Redis.from_url(settings.REDIS_URL).delete("agentsite")


@pytest.fixture
def run(make_user) -> Run:
    return Run.objects.create(owner=make_user(), task="t", status=RunStatus.RUNNING)


def step(run: Run, step_id: str, **fields) -> Step:
    return Step.objects.create(
        run=run, step_id=step_id, title=step_id, instruction="x", role="writer", **fields
    )


def ago(seconds: float):
    return timezone.now() - timedelta(seconds=seconds)


def test_a_step_whose_worker_went_silent_is_handed_to_another(run):
    lease = settings.AGENTSITE_STEP_LEASE_S
    step(run, "lost", status=StepStatus.RUNNING, worker="w1", heartbeat_at=ago(lease + 1))
    step(run, "alive", status=StepStatus.RUNNING, worker="w2", heartbeat_at=ago(lease / 2))

    assert sweep()["taken_over"] == 1

    assert queued() == [("execute_step", (run.pk, "lost"), {"takeover": True})]
    event = run.events.get(type="step.worker_lost")
    assert event.step_id == "lost" and event.payload["worker"] == "w1"


def test_queued_work_nobody_claimed_is_queued_again(run):
    after = settings.AGENTSITE_REQUEUE_AFTER_S
    step(run, "forgotten", status=StepStatus.QUEUED, queued_at=ago(after + 5))
    step(run, "recent", status=StepStatus.QUEUED, queued_at=ago(after / 2))
    assert sweep()["queued_again"] == 1
    assert queued() == [("execute_step", (run.pk, "forgotten"), {})]


def test_a_run_whose_planning_message_was_lost_is_planned_again(make_user):
    after = settings.AGENTSITE_REQUEUE_AFTER_S
    lost = Run.objects.create(owner=make_user(), task="lost")
    held = Run.objects.create(owner=make_user("bob"), task="held")
    planned = Run.objects.create(owner=make_user("carol"), task="planned")
    PlanVersion.objects.create(run=planned, number=1, author="planner", plan={})
    Run.objects.update(created_at=ago(after + 1))

    with task_lease("plan", held.pk) as mine:  # a live worker is planning this one
        assert mine
        assert sweep()["plans_again"] == 1

    assert queued() == [("plan_run", (lost.pk,), {})]


def test_a_re_plan_that_never_started_is_asked_for_again_after_a_period(run, settings):
    settings.AGENTSITE_REQUEUE_AFTER_S = 1
    settings.AGENTSITE_SWEEP_S = 0.5
    run.replanning = True
    run.save()
    step(run, "broke", status=StepStatus.FAILED, finished_at=timezone.now())
    assert sweep()["replans_again"] == 0  # first seen now: it may only be on its way
    time.sleep(1.1)
    assert sweep()["replans_again"] == 1
    assert queued() == [("replan_task", (run.pk, "broke"), {})]


def test_a_requested_revision_whose_message_was_lost_is_asked_for_again(run):
    proposal = PlanProposal.objects.create(run=run, base_version=1, note="add mate")
    PlanProposal.objects.update(created_at=ago(settings.AGENTSITE_REQUEUE_AFTER_S + 1))
    assert sweep()["revisions_again"] == 1
    assert queued() == [("revise_plan_task", (proposal.pk,), {})]


def test_the_sweep_asks_once_per_period_whichever_worker_runs_it(run):
    lease = settings.AGENTSITE_STEP_LEASE_S
    step(run, "lost", status=StepStatus.RUNNING, worker="w1", heartbeat_at=ago(lease + 1))
    assert sweep()["taken_over"] == 1
    assert sweep() == {}  # a second beat right after: nothing swept twice
    assert len(queued()) == 1


def test_finished_runs_are_left_alone(run):
    lease = settings.AGENTSITE_STEP_LEASE_S
    step(run, "lost", status=StepStatus.RUNNING, worker="w1", heartbeat_at=ago(lease + 1))
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
    assert sweep()["taken_over"] == 0
    assert queued() == []


def _at_once(count: int, target) -> list:
    """target(index) in `count` threads released together, each on its own connection."""
    results: list = [None] * count
    barrier = threading.Barrier(count)

    def body(index: int) -> None:
        try:
            barrier.wait()
            results[index] = target(index)
        except BaseException as exc:  # reported by the test, not lost in a thread
            results[index] = exc
        finally:
            close_old_connections()

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.mark.database
@pytest.mark.django_db(transaction=True)
def test_of_sweeps_asked_for_at_once_one_goes_through_per_period():
    period = 0.5
    for _ in range(3):
        claims = _at_once(8, lambda index: sweep_claim(period, f"worker{index}"))
        assert not [c for c in claims if isinstance(c, BaseException)], claims
        won = [index for index, claim in enumerate(claims) if claim is not None]
        assert len(won) == 1, claims
        assert Sweep.objects.get().swept_by == f"worker{won[0]}"
        assert sweep_claim(period, "late") is None  # within the period: nobody else
        time.sleep(period + 0.1)


@pytest.mark.database
@pytest.mark.django_db(transaction=True)
def test_two_workers_sweeping_at_once_hand_a_lost_step_out_once(run):
    lease = settings.AGENTSITE_STEP_LEASE_S
    step(run, "lost", status=StepStatus.RUNNING, worker="w1", heartbeat_at=ago(lease + 1))
    swept = _at_once(2, lambda index: sweep(f"worker{index}"))
    assert sorted(bool(done) for done in swept) == [False, True], swept
    assert max(swept, key=len)["taken_over"] == 1
    assert queued() == [("execute_step", (run.pk, "lost"), {"takeover": True})]
    assert run.events.filter(type="step.worker_lost").count() == 1
