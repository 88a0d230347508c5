"""The scheduler: a step's end counts its dependents down and queues those left with nothing
to wait on, in one statement; and when the task queue refuses a hand-over, the run waits for
it, says so, and the work is handed over once the queue answers."""

from __future__ import annotations

import pytest

from agentsite import embedded
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.models import Run
from planner_ui.services.handover import sends_pending
from planner_ui.services.runs import run_create
from tests.conftest import wait_until
from tests.services.conftest import queued_on

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_refused_hand_over_waits_for_the_queue_and_says_so(make_user, queue_socket):
    run = run_create(owner=make_user(), options=RunOptions(task="Research tea"))
    run = Run.objects.get(pk=run.pk)
    assert run.status == RunStatus.PLANNING  # not failed: the queue may be back in a moment
    delayed = run.events.get(type="handover.delayed")
    assert delayed.payload["task"] == "plan_run"
    assert delayed.payload["retry_s"] == 30
    assert "connecting to" in delayed.payload["error"]

    redis_server = embedded.start_redis(queue_socket)
    try:
        messages = wait_until(lambda: queued_on(queue_socket), timeout=10, what="the hand-over")
        assert len(messages) == 1 and b"planner_ui.tasks.plan_run" in messages[0]
        assert sends_pending() == 0
    finally:
        embedded.stop_processes([redis_server])


def test_tasks_refused_together_each_say_so_and_arrive_together(make_user, queue_socket):
    from django.db import transaction

    from planner_ui.services.scheduler import plan_enqueue

    owner = make_user()
    runs = [
        Run.objects.create(owner=owner, task=f"t{i}", status=RunStatus.PLANNING) for i in (1, 2)
    ]
    with transaction.atomic():  # one transaction: its tasks leave in one batch
        for run in runs:
            plan_enqueue(run)
    for run in runs:
        assert run.events.filter(type="handover.delayed").count() == 1
    redis_server = embedded.start_redis(queue_socket)
    try:
        wait_until(lambda: len(queued_on(queue_socket)) == 2, timeout=10, what="both hand-overs")
    finally:
        embedded.stop_processes([redis_server])


def test_a_queue_away_for_longer_leaves_the_work_to_the_sweep(make_user, queue_socket, settings):
    settings.AGENTSITE_SEND_RETRY_S = 1
    run = run_create(owner=make_user(), options=RunOptions(task="Research tea"))
    assert Run.objects.get(pk=run.pk).events.get(type="handover.delayed").payload["retry_s"] == 1
    wait_until(lambda: sends_pending() == 0, timeout=10, what="the resender to give up")
    run.refresh_from_db()
    assert run.status == RunStatus.PLANNING  # the sweep sends its planning again


@pytest.mark.django_db
@pytest.mark.parametrize("first", ["fails", "succeeds"])
def test_a_run_ends_when_its_last_step_does_whichever_parent_of_a_join_ends_first(make_user, first):
    from planner_ui.agents.executor import StepOutcome
    from planner_ui.core.status import StepStatus
    from planner_ui.services.steps import step_finish
    from tests.services.test_concurrency import joined_pair

    run = joined_pair(make_user(), replan_mode=Run.Replan.OFF)

    def fail() -> None:
        step_finish(run.pk, "a", error="boom")

    def succeed() -> None:
        step_finish(run.pk, "b", outcome=StepOutcome(output="fine"))

    (fail if first == "fails" else succeed)()
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING  # the other parent is still running
    (succeed if first == "fails" else fail)()

    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error == "step 'a' failed: boom"
    join = run.steps.get(step_id="join")
    assert (join.status, join.error) == (StepStatus.SKIPPED, "not run because step 'a' failed")


@pytest.mark.django_db
def test_a_step_end_counts_down_and_queues_only_what_it_made_ready_in_one_statement(make_user):
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from planner_ui.core.status import StepStatus
    from planner_ui.models import Step
    from planner_ui.services.scheduler import _count_down
    from tests.services.test_concurrency import running_run

    # c waits on a alone, d on a and b; e (on a) was queued already by another way.
    run = running_run(
        make_user(), [("a", []), ("b", []), ("e", ["a"]), ("d", ["a", "b"]), ("c", ["a"])]
    )
    earlier = timezone.now() - timezone.timedelta(seconds=5)
    Step.objects.filter(run=run, step_id="e").update(status=StepStatus.QUEUED, queued_at=earlier)
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        counted = _count_down(run, ["e", "d", "c"])
    assert len([q for q in queries if q["sql"].startswith("UPDATE")]) == 1
    assert (counted.ready, counted.waiting) == (["c"], True)  # d waits on b; e queued before
    steps = {s.step_id: s for s in run.steps.all()}
    assert (steps["c"].status, steps["c"].waiting_on) == (StepStatus.QUEUED, 0)
    assert steps["c"].queued_at > earlier
    assert (steps["d"].status, steps["d"].waiting_on) == (StepStatus.PENDING, 1)
    assert (steps["e"].status, steps["e"].queued_at) == (StepStatus.QUEUED, earlier)

    # A paused run counts down and queues nothing: resuming queues what became ready.
    run.paused_at = timezone.now()
    with transaction.atomic():
        assert _count_down(run, ["d"])[:2] == ([], True)
    d = run.steps.get(step_id="d")
    assert (d.status, d.waiting_on) == (StepStatus.PENDING, 0)
