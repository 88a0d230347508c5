"""A worker that finishes a step runs a step it made ready itself (`carry_for_s`), and a task handed
back because that worker died takes over what it was carrying. In-process with the offline
executor; these tests' transactions never commit, so the tasks stay in their transaction's
AfterCommit, where the tests read them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from planner_ui.core.plan import SYNTHESIS_STEP_ID
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Run, Step
from planner_ui.providers.scripted import script
from planner_ui.services.broadcast import AfterCommit
from planner_ui.services.runs import run_approve_plan, run_create, run_plan
from planner_ui.services.steps import StepBusy, step_claim, step_execute
from planner_ui.stores import sql

pytestmark = [pytest.mark.database, pytest.mark.django_db]

CARRY_S = 300.0


def _step(step_id: str, depends_on: list[str]) -> dict:
    return {
        "id": step_id,
        "title": step_id,
        "instruction": f"Write about {step_id}.",
        "role": "writer",
        "tools": [],
        "depends_on": depends_on,
    }


def approved(owner, name: str, steps: list[dict]) -> Run:
    script(name).plan({"goal": "Tea", "steps": steps})
    run = run_create(
        owner=owner, options=RunOptions(task="Tea", routes={"planner": f"scripted:{name}"})
    )
    run_plan(run.pk)
    run_approve_plan(run.pk)
    return Run.objects.get(pk=run.pk)


def sent_steps() -> list[str]:
    """The steps whose tasks the test's transaction would hand to the queue."""
    hooks = [hook for _, hook, _ in connection.run_on_commit if isinstance(hook, AfterCommit)]
    return [send.args[1] for hook in hooks for send, _ in hook.tasks if len(send.args) == 2]


def steps_of(run: Run) -> dict[str, tuple[str, str]]:
    return {s.step_id: (s.status, s.worker) for s in run.steps.all()}


# a and b done by w1, which carried on from a to b; c waits in the queue.
B_CARRIED_C_SENT = {
    "a": (StepStatus.SUCCEEDED, "w1"),
    "b": (StepStatus.SUCCEEDED, "w1"),
    "c": (StepStatus.QUEUED, ""),
    SYNTHESIS_STEP_ID: (StepStatus.PENDING, ""),
}


def test_a_finished_step_runs_one_step_it_made_ready_and_sends_the_others(make_user):
    run = approved(make_user(), "fan", [_step("a", []), _step("b", ["a"]), _step("c", ["a"])])
    assert sent_steps() == ["a"]

    step_execute(run.pk, "a", "w1", carry_for_s=CARRY_S)

    # b ran next in the same process, with no task of its own; c went to the queue. b's end
    # made nothing ready (the synthesis waits for c too), so the process stopped there.
    assert steps_of(run) == B_CARRIED_C_SENT
    assert sent_steps() == ["a", "c"]
    # Claimed in a's end, in the same transaction: its events follow on from a's.
    started = run.events.get(type="step.started", step_id="b")
    assert started.payload == {"attempt": 1, "worker": "w1", "carried_from": "a"}
    succeeded = run.events.get(type="step.succeeded", step_id="a").seq
    following = run.events.filter(seq__gt=succeeded, seq__lte=succeeded + 3).order_by("seq")
    assert [(e.type, e.step_id) for e in following] == [
        ("step.queued", "b"),
        ("step.queued", "c"),
        ("step.started", "b"),
    ]

    step_execute(run.pk, "c", "w2", carry_for_s=CARRY_S)
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    assert steps_of(run)[SYNTHESIS_STEP_ID] == (StepStatus.SUCCEEDED, "w2")
    assert sent_steps() == ["a", "c"]
    assert list(run.events.filter(type="step.queued").values_list("step_id", flat=True)) == [
        "a",
        "b",
        "c",
        SYNTHESIS_STEP_ID,
    ]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="one statement on PostgreSQL only")
def test_on_postgresql_the_finish_that_readies_a_step_claims_it_in_the_same_statement(
    make_user,
):
    run = approved(make_user(), "one", [_step("a", []), _step("b", ["a"]), _step("c", ["a"])])
    with CaptureQueriesContext(connection) as statements:
        step_execute(run.pk, "a", "w1", carry_for_s=CARRY_S)
    assert steps_of(run) == B_CARRIED_C_SENT
    # a finished, b queued and started by one statement, at one instant: the count-down and
    # the claim were round trips of their own after the finish, with the rows locked.
    a, b = run.steps.get(step_id="a"), run.steps.get(step_id="b")
    assert a.finished_at == b.queued_at == b.started_at
    assert b.attempts == 1
    counting = [q["sql"] for q in statements if "waiting_on = step.waiting_on - 1" in q["sql"]]
    assert len(counting) == 2  # a's finish claimed b; b's counted the synthesis down
    assert all(q.startswith("WITH run_state") for q in counting)
    claims = f"UPDATE {sql.table(Step)} SET status"
    assert not [q for q in statements if q["sql"].startswith(claims)]


def test_without_carry_on_a_step_runs_alone(make_user):
    run = approved(make_user(), "alone", [_step("a", []), _step("b", ["a"])])
    step_execute(run.pk, "a", "w1")
    assert steps_of(run)["b"] == (StepStatus.QUEUED, "")
    assert sent_steps() == ["a", "b"]


def test_a_task_carries_on_only_for_its_time_then_sends_to_the_queue(make_user, settings):
    settings.AGENTSITE_OFFLINE_LATENCY_S = 0.2  # each step takes at least this long
    run = approved(make_user(), "time", [_step("a", []), _step("b", ["a"]), _step("c", ["b"])])
    # a starts within the time and carries on to b; b starts after it, so c is sent.
    step_execute(run.pk, "a", "w1", carry_for_s=0.1)
    assert steps_of(run) == B_CARRIED_C_SENT
    assert sent_steps() == ["a", "c"]


def chain_died_in_b(owner, name: str, *, heartbeat_age_s: float) -> Run:
    """a → b: process w1 finished a, carried on to b and died in it."""
    run = approved(owner, name, [_step("a", []), _step("b", ["a"])])
    step_execute(run.pk, "a", "w1")
    assert step_claim(run.pk, "b", "w1") is not None
    Step.objects.filter(run=run, step_id="b").update(
        heartbeat_at=timezone.now() - timedelta(seconds=heartbeat_age_s)
    )
    return run


def test_a_handed_back_task_takes_over_the_step_its_dead_process_carried_on_to(make_user, settings):
    run = chain_died_in_b(make_user(), "died", heartbeat_age_s=settings.AGENTSITE_STEP_LEASE_S + 1)

    # a's task comes back (its process died before acknowledging it): a is done, b is not.
    step_execute(run.pk, "a", "w2", redelivered=True, carry_for_s=CARRY_S)

    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED, run.error
    b = run.steps.get(step_id="b")
    assert (b.worker, b.attempts) == ("w2", 2)
    assert steps_of(run)[SYNTHESIS_STEP_ID] == (StepStatus.SUCCEEDED, "w2")


def test_while_the_carried_step_beats_its_worker_is_taken_for_alive(make_user):
    run = chain_died_in_b(make_user(), "alive", heartbeat_age_s=0)
    with pytest.raises(StepBusy):
        step_execute(run.pk, "a", "w2", redelivered=True, carry_for_s=CARRY_S)
    assert steps_of(run)["b"] == (StepStatus.RUNNING, "w1")


def test_a_handed_back_task_of_a_finished_chain_does_nothing(make_user):
    run = approved(make_user(), "done", [_step("a", []), _step("b", ["a"])])
    step_execute(run.pk, "a", "w1", carry_for_s=CARRY_S)
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    before = run.last_event_seq
    step_execute(run.pk, "a", "w2", redelivered=True, carry_for_s=CARRY_S)
    run.refresh_from_db()
    assert run.last_event_seq == before
    assert {worker for _, worker in steps_of(run).values()} == {"w1"}
