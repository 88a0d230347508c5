"""What the database must guarantee when many workers write one run at once. `make test` runs
these on SQLite and, where a PostgreSQL server answers, again on PostgreSQL."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import OperationalError, close_old_connections, connection, transaction
from django.utils import timezone

from planner_ui.agents.executor import StepOutcome
from planner_ui.core.errors import RunStopped
from planner_ui.core.messages import ModelReply, Usage
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Run, RunEvent, Step
from planner_ui.providers.metered import CallRecord
from planner_ui.providers.offline import OfflineProvider
from planner_ui.services.accounting import call_record, metered
from planner_ui.services.event_buffer import EventBuffer
from planner_ui.services.events import event_append
from planner_ui.services.scheduler import dependencies_count
from planner_ui.services.steps import _carry, step_claim, step_finish
from planner_ui.stores import sql
from tests.providers.offline.requests import executor_request

pytestmark = [pytest.mark.database, pytest.mark.django_db(transaction=True)]


def _in_threads(count: int, target) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def body(index: int) -> None:
        try:
            barrier.wait()
            target(index)
        except BaseException as exc:  # reported by the test, not lost in a thread
            errors.append(exc)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return errors


def test_concurrent_appends_get_unique_contiguous_sequence_numbers(make_user):
    run = Run.objects.create(owner=make_user(), task="t")

    def append_many(index: int) -> None:
        for n in range(20):
            event_append(run.pk, "plan.invalid", {"attempt": n, "errors": []}, step_id=f"s{index}")

    assert _in_threads(6, append_many) == []
    seqs = sorted(RunEvent.objects.filter(run=run).values_list("seq", flat=True))
    assert seqs == list(range(1, 121))
    run.refresh_from_db()
    assert run.last_event_seq == 120
    for index in range(6):
        mine = RunEvent.objects.filter(run=run, step_id=f"s{index}").order_by("seq")
        assert [e.payload["attempt"] for e in mine] == list(range(20))


def joined_pair(owner, **run_fields) -> Run:
    """A running run: steps a and b running, and `join` waiting on both."""
    return running_run(owner, [("a", []), ("b", []), ("join", ["a", "b"])], **run_fields)


def running_run(owner, steps: list[tuple[str, list[str]]], **run_fields) -> Run:
    """A running run of `steps` (id, dependencies): those with none running, the others
    waiting on them."""
    run = Run.objects.create(owner=owner, task="t", status=RunStatus.RUNNING, **run_fields)
    for i, (step_id, deps) in enumerate(steps):
        Step.objects.create(
            run=run,
            step_id=step_id,
            position=i,
            title=step_id,
            instruction="x",
            role="writer",
            depends_on=deps,
            status=StepStatus.RUNNING if not deps else StepStatus.PENDING,
        )
    dependencies_count(run)
    return run


def test_two_parents_finishing_at_once_queue_their_child_exactly_once(make_user):
    run = joined_pair(make_user())

    def finish(index: int) -> None:
        step_finish(run.pk, "ab"[index], outcome=StepOutcome(output=f"out {index}"))

    assert _in_threads(2, finish) == []
    join = Step.objects.get(run=run, step_id="join")
    assert join.status == StepStatus.QUEUED
    assert RunEvent.objects.filter(run=run, type="step.queued", step_id="join").count() == 1


def test_two_people_approving_at_once_perform_the_call_once(make_user, mailoutbox):
    from planner_ui.models import Approval, ToolReceipt
    from planner_ui.services.approvals import ApprovalRefused, approval_decide
    from planner_ui.services.runs import run_approve_plan
    from tests.services.test_runs import drive, planned

    alice = make_user()
    run = planned(alice, "Write a two-line status note and email it to bob@example.com")
    run_approve_plan(run.pk)
    drive(run)
    approval = Approval.objects.get(run=run, state=Approval.State.PENDING)
    outcomes: list[str] = []

    def decide(index: int) -> None:
        try:
            approval_decide(user=alice, approval=approval, approve=index % 2 == 0)
            outcomes.append("decided")
        except ApprovalRefused as exc:
            outcomes.append(str(exc))

    assert _in_threads(4, decide) == []
    assert outcomes.count("decided") == 1
    assert all("already" in o for o in outcomes if o != "decided")
    # The step was queued again exactly once, whatever the decision was.
    resumed = RunEvent.objects.filter(run=run, type="step.queued", payload__resumed=True)
    assert resumed.count() == 1
    drive(run)
    approval.refresh_from_db()
    sent = 1 if approval.state == Approval.State.APPROVED else 0
    assert len(mailoutbox) == sent == ToolReceipt.objects.filter(run=run).count()


# --- a step's finish holds its run in a shared lock (PostgreSQL) -------------------------------

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite serializes every write: no row locks"
)


@contextmanager
def run_row_held(run: Run, lock: str) -> Iterator[None]:
    """Another connection holds the run's row `lock` (as a finish in flight holds it in "KEY
    SHARE") until the block ends."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"SELECT 1 FROM {sql.table(Run)} WHERE id = %s FOR {lock}", [run.pk])
                held.set()
                release.wait(timeout=30)
        finally:
            close_old_connections()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert held.wait(timeout=10)
        yield
    finally:
        release.set()
        thread.join(timeout=30)


@contextmanager
def lock_timeout(seconds: float) -> Iterator[None]:
    """A wait for a lock on this connection fails after `seconds` instead of hanging a test."""
    with connection.cursor() as cursor:
        cursor.execute(f"SET lock_timeout = '{int(seconds * 1000)}ms'")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")


@postgresql_only
def test_a_step_finishes_and_queues_its_child_while_another_finish_is_in_flight(make_user):
    run = joined_pair(make_user())
    with run_row_held(run, "KEY SHARE"), lock_timeout(2):
        step_finish(run.pk, "a", outcome=StepOutcome(output="out a"))
        step_finish(run.pk, "b", outcome=StepOutcome(output="out b"))
    assert Step.objects.get(run=run, step_id="join").status == StepStatus.QUEUED
    seqs = list(RunEvent.objects.filter(run=run).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))


@postgresql_only
def test_a_carried_step_gets_the_output_its_other_parent_committed_while_it_was_being_readied(
    make_user,
):
    run = joined_pair(make_user())
    # b's end, made by hand in another connection: its output stored and the join counted
    # down, not yet committed. a's count-down waits for the join's row until it commits. b
    # stamped its end later than a will: its process was faster to the database.
    b_holds, b_may_commit = threading.Event(), threading.Event()
    b_ended = timezone.now() + timedelta(seconds=1)

    def b_finishes() -> None:
        try:
            with transaction.atomic():
                steps = Step.objects.filter(run=run)
                steps.filter(step_id="b").update(
                    status=StepStatus.SUCCEEDED, output="out b", finished_at=b_ended
                )
                steps.filter(step_id="join").update(waiting_on=1)
                b_holds.set()
                b_may_commit.wait(10)
        finally:
            close_old_connections()

    def commit_b_once_a_waits() -> None:
        try:
            with connection.cursor() as cursor:
                for _ in range(500):
                    cursor.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND datname = current_database()"
                    )
                    if cursor.fetchone()[0]:
                        break
                    time.sleep(0.01)
        finally:
            b_may_commit.set()
            close_old_connections()

    b = threading.Thread(target=b_finishes)
    b.start()
    assert b_holds.wait(10)
    waiter = threading.Thread(target=commit_b_once_a_waits)
    waiter.start()
    loaded: dict[int, Step] = {}
    carry = _carry(run.pk, "a", "w", loaded)
    with lock_timeout(5):
        step_finish(run.pk, "a", outcome=StepOutcome(output="out a"), carry=carry)
    b.join(10)
    waiter.join(10)

    # The count-down's snapshot was taken before b committed; the parents' outputs it hands
    # the carried step are b's as committed, not as that snapshot saw them.
    (join,) = loaded.values()
    assert (join.step_id, join.status, join.worker) == ("join", StepStatus.RUNNING, "w")
    assert sorted(join.context_read) == [("a", "a", "out a"), ("b", "b", "out b")]
    # And it started when the later of its parents ended, not before.
    assert join.started_at == b_ended > Step.objects.get(run=run, step_id="a").finished_at


@postgresql_only
def test_a_failure_and_a_pause_wait_for_the_finishes_in_flight(make_user):
    from planner_ui.services.runs import run_pause

    owner = make_user()
    run = joined_pair(owner)
    with run_row_held(run, "KEY SHARE"), lock_timeout(0.5):
        # A failure decides the run's fate, and a pause must not slip in between a finish's
        # read of the run and the children it queues: both hold the run's row alone.
        with pytest.raises(OperationalError, match="lock timeout"):
            step_finish(run.pk, "a", error="boom")
        with pytest.raises(OperationalError, match="lock timeout"):
            run_pause(run.pk, owner)
    assert Step.objects.get(run=run, step_id="a").status == StepStatus.RUNNING


@postgresql_only
def test_a_finish_waits_while_a_person_changes_the_run(make_user):
    run = joined_pair(make_user())
    with run_row_held(run, "UPDATE"), lock_timeout(0.5):
        with pytest.raises(OperationalError, match="lock timeout"):
            step_finish(run.pk, "a", outcome=StepOutcome(output="out a"))
    step_finish(run.pk, "a", outcome=StepOutcome(output="out a"))
    assert Step.objects.get(run=run, step_id="a").status == StepStatus.SUCCEEDED


def test_many_siblings_finishing_at_once_queue_their_join_once_with_every_event_numbered(
    make_user,
):
    parents = [f"p{i}" for i in range(8)]
    run = running_run(make_user(), [*((p, []) for p in parents), ("join", parents)])

    def finish(index: int) -> None:
        step_finish(run.pk, parents[index], outcome=StepOutcome(output=f"out {index}"))

    assert _in_threads(len(parents), finish) == []
    assert Step.objects.get(run=run, step_id="join").status == StepStatus.QUEUED
    events = list(RunEvent.objects.filter(run=run).values_list("seq", "type", "step_id"))
    assert [seq for seq, _, _ in events] == list(range(1, 10))
    assert sorted(s for _, t, s in events if t == "step.succeeded") == parents
    assert [(t, s) for _, t, s in events if t == "step.queued"] == [("step.queued", "join")]
    run.refresh_from_db()
    assert run.last_event_seq == 9


def test_a_shared_finish_numbers_its_events_then_its_childrens_in_one_run_of_seqs(make_user):
    # a's success readies z and x (queued in the plan's order: z before x) and counts y down.
    run = running_run(
        make_user(), [("a", []), ("b", []), ("z", ["a"]), ("y", ["a", "b"]), ("x", ["a"])]
    )
    event_append(run.pk, "plan.invalid", {"attempt": 0, "errors": []})  # seq 1: not at 0
    step_finish(run.pk, "a", outcome=StepOutcome(output="out"))
    events = list(RunEvent.objects.filter(run=run).values_list("seq", "type", "step_id"))
    assert [seq for seq, _, _ in events] == list(range(1, len(events) + 1))
    told = [(t, s) for _, t, s in events[1:]]
    assert told[-2:] == [("step.queued", "z"), ("step.queued", "x")]
    assert ("step.succeeded", "a") in told[:-2]
    run.refresh_from_db()
    assert run.last_event_seq == len(events)
    steps = dict(Step.objects.filter(run=run).values_list("step_id", "status"))
    assert (steps["z"], steps["x"], steps["y"]) == ("queued", "queued", "pending")


def test_the_last_two_steps_finishing_at_once_close_the_run_once(make_user):
    run = running_run(make_user(), [("a", []), ("b", [])])

    def finish(index: int) -> None:
        step_finish(run.pk, "ab"[index], outcome=StepOutcome(output=f"out {index}"))

    assert _in_threads(2, finish) == []
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    types = list(RunEvent.objects.filter(run=run).values_list("seq", "type"))
    assert [seq for seq, _ in types] == [1, 2, 3]
    assert [t for _, t in types].count("run.status") == 1


def cancel_slowly(run: Run, started: threading.Event) -> None:
    """Cancel `run` as run_end does, taking the run's row and then its steps', with half a
    second between the two for the test's other side to start in."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {sql.table(Run)} WHERE id = %s FOR UPDATE", [run.pk])
        started.set()
        time.sleep(0.5)
        cursor.execute(
            f"UPDATE {sql.table(Run)} SET status = %s WHERE id = %s",
            [RunStatus.CANCELLED.value, run.pk],
        )
        cursor.execute(
            f"UPDATE {sql.table(Step)} SET status = %s WHERE run_id = %s AND status IN (%s, %s)",
            [StepStatus.SKIPPED.value, run.pk, StepStatus.QUEUED.value, StepStatus.RUNNING.value],
        )


@postgresql_only
def test_a_claim_and_a_cancel_at_once_do_not_deadlock(make_user):
    run = running_run(make_user(), [("q", [])])
    Step.objects.filter(run=run).update(status=StepStatus.QUEUED)
    cancelling, claimed = threading.Event(), []

    def claim() -> None:
        assert cancelling.wait(timeout=10)
        time.sleep(0.1)
        claimed.append(step_claim(run.pk, "q", "w1"))

    cancel = lambda: cancel_slowly(run, cancelling)  # noqa: E731
    assert _in_threads(2, lambda index: (cancel, claim)[index]()) == []
    assert claimed == [None]  # the run was cancelled first: nothing to claim
    assert Step.objects.get(run=run).status == StepStatus.SKIPPED


def _offline_call() -> CallRecord:
    return CallRecord(
        purpose="executor:writer",
        provider="offline",
        model="offline-1",
        usage=Usage(input_tokens=30, output_tokens=12),
        latency_s=0.2,
        stop_reason="end_turn",
    )


@postgresql_only
def test_a_model_calls_record_and_a_cancel_at_once_do_not_deadlock(make_user):
    # The record is one statement on PostgreSQL: it must still take the run's row before its
    # step's, as a cancel takes them, or each would wait for the other.
    run = running_run(make_user(), [("a", [])])
    cancelling, recorded = threading.Event(), []

    def record() -> None:
        assert cancelling.wait(timeout=10)
        time.sleep(0.1)
        call_record(run.pk, "a", _offline_call())
        recorded.append(True)

    cancel = lambda: cancel_slowly(run, cancelling)  # noqa: E731
    assert _in_threads(2, lambda index: (cancel, record)[index]()) == []
    assert recorded == [True]
    step = Step.objects.get(run=run)
    assert (step.status, step.tokens_in, step.tokens_out, step.model_calls) == (
        StepStatus.SKIPPED,
        30,
        12,
        1,
    )
    run.refresh_from_db()
    assert (run.status, run.tokens_in, run.model_calls) == (RunStatus.CANCELLED, 30, 1)
    assert list(RunEvent.objects.filter(run=run).values_list("seq", "type")) == [(1, "model.call")]


@postgresql_only
def _until_another_waits_for_a_lock(timeout_s: float = 10.0) -> None:
    """Until another session of this database waits for a row lock: a fixed sleep let the
    deadlock form the other way round on a loaded machine, and the server failed the other."""
    if connection.vendor != "postgresql":
        return  # SQLite has one writer at a time and shows no one waiting: the sleep decides
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0]:
                return
        time.sleep(0.02)
    raise AssertionError("nobody waited for a lock")


def test_a_finish_the_server_fails_to_break_a_deadlock_goes_again(make_user):
    # Another transaction holds the child's row, then asks for the finishing step's: each
    # waits for the other, and the server fails the one that waited first, the finish. It
    # goes again once the other lets go, rather than leave its step running.
    run = running_run(make_user(), [("a", []), ("b", []), ("child", ["a", "b"])])
    holding, finish_waits, errors = threading.Event(), threading.Event(), []

    def hold_child_then_want_a() -> None:
        try:
            with transaction.atomic():
                Step.objects.select_for_update().get(run=run, step_id="child")
                holding.set()
                assert finish_waits.wait(timeout=10)
                _until_another_waits_for_a_lock()  # the finish, on the child's row
                # Each waiter checks for a deadlock a second after it began to wait: the
                # finish's check must come first, by more than a loaded machine's delays.
                time.sleep(0.3)
                Step.objects.select_for_update().get(run=run, step_id="a")
        except BaseException as exc:
            errors.append(exc)
        finally:
            close_old_connections()

    other = threading.Thread(target=hold_child_then_want_a)
    other.start()
    assert holding.wait(timeout=10)
    finish_waits.set()
    with EventBuffer() as events:  # as a worker runs a step: its call's event waits for its end
        call_record(run.pk, "a", _offline_call(), events=events)
        step_finish(run.pk, "a", outcome=StepOutcome(output="done"), events=events)
    other.join(timeout=30)
    assert errors == []
    steps = {s.step_id: s for s in Step.objects.filter(run=run)}
    assert (steps["a"].status, steps["a"].output) == (StepStatus.SUCCEEDED, "done")
    assert (steps["child"].status, steps["child"].waiting_on) == (StepStatus.PENDING, 1)
    # The call's event, taken by the try that was rolled back, went with the one that stuck.
    assert list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "type")) == [
        (1, "model.call"),
        (2, "step.succeeded"),
    ]


def test_two_calls_at_once_never_pass_the_budget_together(make_user):
    # Two steps' calls made at once, under a budget that pays for one whole answer and half of
    # the other: each call sees the same totals when it starts, so without the first one's hold
    # both would answer in full and pass the budget together.
    request = executor_request("Write a short note on green tea.", [])
    alone = OfflineProvider().complete(request).usage
    budget = 2 * alone.input_tokens + alone.output_tokens + alone.output_tokens // 2
    run = running_run(make_user(), [("a", []), ("b", [])], budget_tokens=budget)
    replies: dict[int, object] = {}

    def call(index: int) -> None:
        provider = metered(run, "ab"[index], OfflineProvider(latency_s=0.3))
        try:
            replies[index] = provider.complete(request)
        except RunStopped as exc:
            replies[index] = exc

    assert _in_threads(2, call) == []
    run.refresh_from_db()
    assert run.tokens_in + run.tokens_out == budget
    whole = [r for r in replies.values() if isinstance(r, ModelReply)]
    stopped = [r for r in replies.values() if isinstance(r, RunStopped)]
    assert len(whole) == 1 and whole[0].stop_reason == "end_turn"
    # The other waited for the first to be counted, then was held to what was left.
    assert len(stopped) == 1
    assert f"left room for an answer of {alone.output_tokens // 2:,} tokens" in str(stopped[0])
    assert run.status == RunStatus.FAILED
    assert set(Step.objects.filter(run=run).values_list("budget_held_tokens", flat=True)) == {0}
    # The run's log says why the second call was late.
    (waited,) = RunEvent.objects.filter(run=run, type="budget.waiting")
    assert waited.payload == {
        "calls": 1,
        "held_tokens": budget,  # all of it: the first call could have answered with the rest
        "held_usd": "0.000000",
    }
