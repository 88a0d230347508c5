"""Crashes with real worker processes: a worker SIGKILLed in the middle of a step, and one
restarted while an approval waits. Every irreversible call is counted where it arrives, at a
local HTTP server, and must have arrived exactly once."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from itertools import count

import pytest
from django.conf import settings
from django.db import connection

from agentsite import embedded
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Approval, Run, ToolReceipt
from planner_ui.services.approvals import approval_decide
from planner_ui.services.runs import run_create
from tests.conftest import child_env, wait_until
from tests.fakes.receiver import Receiver

pytestmark = [
    pytest.mark.stack,
    pytest.mark.crash,
    pytest.mark.django_db(transaction=True),
]

_names = count(1)


class Workers:
    """Worker processes of this test alone: slow model calls, so a kill lands mid-step, and a
    short visibility timeout and lease, so a killed worker's task comes back in seconds."""

    def __init__(self) -> None:
        self.procs = []
        self.names = {}

    def start(self, **settings_env: str):
        name = f"crash{next(_names)}"
        env = child_env(
            **{
                "AGENTSITE_OFFLINE_LATENCY_S": "1.5",
                "AGENTSITE_TOOL_NET_ALLOW": "127.0.0.1",
                "CELERY_VISIBILITY_TIMEOUT": "3",
                "CELERY_UNACKED_RESTORE_INTERVAL": "1",
                "CELERY_UNACKED_RESTORE_THROTTLE": "1",
                # A worker killed while it looked leaves its lock for this long.
                "CELERY_UNACKED_MUTEX_EXPIRE": "2",
                "AGENTSITE_STEP_LEASE_S": "2",
                **settings_env,
            }
        )
        proc = embedded.start_worker(
            env=env,
            concurrency=1,
            hostname=f"{name}@%h",
            log_path=settings.VAR_DIR / f"worker-{name}.log",
        )
        self.procs.append(proc)
        self.names[f"{name}@"] = proc
        embedded.wait_for_worker(name, timeout=60)
        return proc

    def kill(self, proc) -> None:
        """SIGKILL the worker and its pool at once: nothing gets to acknowledge or clean up."""
        embedded._signal(proc, signal.SIGKILL, whole_group=True)
        proc.wait(timeout=10)


@pytest.fixture
def workers(redis_url) -> Iterator[Workers]:
    from agentsite.celery import app

    app.control.purge()
    pool = Workers()
    try:
        yield pool
    finally:
        embedded.stop_processes(pool.procs)
        # A pool process left behind by its worker would still write while the database is
        # emptied for the next test (its flush then fails, and every test after it).
        for proc in pool.procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)


def submit(user, receiver: Receiver, **policy) -> Run:
    return run_create(
        owner=user,
        options=RunOptions(
            task=f"Summarize the benefits of tea and post the summary to {receiver.url}/hook",
            auto_approve=True,
            **policy,
        ),
    )


def post_step(run: Run):
    """The step that posts, once the plan has been made."""
    return next((s for s in run.steps.all() if "http_post" in s.tools), None)


def finished(run: Run, timeout: float = 90) -> Run:
    def done() -> bool:
        run.refresh_from_db()
        return run.is_finished

    wait_until(done, timeout=timeout, what=f"run {run.pk} to finish")
    return run


def test_a_worker_killed_after_the_call_does_not_repeat_it(workers, make_user):
    with Receiver() as receiver:
        first = workers.start()
        run = submit(make_user(), receiver, tool_policy="auto", auto_tools=["http_post"])
        wait_until(
            lambda: ToolReceipt.objects.filter(run=run, state=ToolReceipt.State.DONE).exists(),
            timeout=60,
            what="the post to be made and its receipt stored",
        )
        # The step now waits on its next model call (1.5 s): kill the worker in the middle.
        workers.kill(first)
        step = post_step(run)
        assert step.status == StepStatus.RUNNING
        workers.start()
        run = finished(run)
        assert run.status == RunStatus.SUCCEEDED, run.error
        assert receiver.count == 1
        receipt = run.receipts.get()
        assert receiver.received[0]["idempotency_key"] == receipt.idempotency_key
        step.refresh_from_db()
        assert step.attempts == 2
        # The second attempt went on from its checkpoint: the result it had, not a new call.
        assert run.events.filter(type="tool.performing").count() == 1


def test_a_worker_killed_during_the_call_never_repeats_it_and_asks_a_person(workers, make_user):
    alice = make_user()
    with Receiver(delay_s=6) as receiver:
        first = workers.start()
        run = submit(alice, receiver, tool_policy="auto", auto_tools=["http_post"])
        wait_until(lambda: receiver.count == 1, timeout=60, what="the post to arrive")
        workers.kill(first)  # before the answer came back: the outcome is unknown
        assert run.receipts.get().state == ToolReceipt.State.IN_FLIGHT
        workers.start()
        question = wait_until(
            lambda: Approval.objects.filter(run=run, kind=Approval.Kind.OUTCOME).first(),
            timeout=60,
            what="the question of what happened",
        )
        assert post_step(run).status == StepStatus.WAITING
        assert run.receipts.get().state == ToolReceipt.State.UNKNOWN
        approval_decide(user=alice, approval=question, approve=True, resolution="happened")
        run = finished(run)
        assert run.status == RunStatus.SUCCEEDED, run.error
        assert receiver.count == 1
        receipt = run.receipts.get()
        assert receipt.state == ToolReceipt.State.DONE
        result = run.events.filter(type="step.tool_result", payload__tool="http_post").get()
        assert result.payload["content"].startswith("alice confirmed that this http_post call")


def test_an_approval_pending_across_a_worker_restart_resumes_the_run(workers, make_user):
    alice = make_user()
    with Receiver() as receiver:
        first = workers.start()
        run = submit(alice, receiver)
        wait_until(
            lambda: getattr(post_step(run), "status", None) == StepStatus.WAITING,
            timeout=60,
            what="the post to wait for approval",
        )
        assert Approval.objects.get(run=run).state == Approval.State.PENDING
        # The waiting step holds no task: stopping every worker loses nothing.
        embedded.stop_processes([first])
        assert receiver.count == 0
        workers.start()
        approval = Approval.objects.get(run=run)
        approval_decide(user=alice, approval=approval, approve=True)
        run = finished(run)
        assert run.status == RunStatus.SUCCEEDED, run.error
        assert receiver.count == 1
        assert run.receipts.get().authorized_by == "alice"


def test_with_no_beat_a_dead_worker_s_step_is_taken_over_by_another_worker(workers, make_user):
    """No beat runs, and the broker would hand the dead worker's task back only after an hour:
    what takes the step over is the sweep the surviving worker runs itself."""
    if connection.vendor != "postgresql":
        # Several machines, no beat: a production setup, so PostgreSQL (make test's second
        # pass). On SQLite this test has twice left the database "malformed" in the full run
        # (two workers sweeping every second, one SIGKILLed): not understood yet.
        pytest.skip("runs on PostgreSQL, in make test's PostgreSQL pass")
    no_beat = {
        "CELERY_VISIBILITY_TIMEOUT": "3600",
        "AGENTSITE_SWEEP_S": "1",
        # The dead worker's prefetched messages come back only with the sweep too.
        "AGENTSITE_REQUEUE_AFTER_S": "5",
        "AGENTSITE_OFFLINE_LATENCY_S": "4",
    }
    both = [workers.start(**no_beat), workers.start(**no_beat)]
    run = run_create(owner=make_user(), options=RunOptions(task="Research tea", auto_approve=True))
    step = wait_until(
        lambda: run.steps.filter(status=StepStatus.RUNNING).first(),
        timeout=60,
        what="a step running",
    )
    dead_worker = step.worker
    victim = next(proc for name, proc in workers.names.items() if dead_worker.startswith(name))
    workers.kill(victim)
    killed_at = time.monotonic()

    def taken_over() -> bool:
        step.refresh_from_db()
        return step.attempts == 2 and step.worker != dead_worker

    wait_until(taken_over, timeout=60, what="the dead worker's step to be taken over")
    assert time.monotonic() - killed_at < 60
    assert [proc for proc in both if proc.poll() is None] == [p for p in both if p is not victim]
    lost = run.events.get(type="step.worker_lost", step_id=step.step_id)
    assert lost.payload["worker"] == dead_worker
    run = finished(run, timeout=150)
    assert run.status == RunStatus.SUCCEEDED, run.error
