"""Reconciliation: work whose worker died or whose message was lost, handed out again.

Every worker asks to sweep every AGENTSITE_SWEEP_S (services.sweeper), and so does Celery
beat where one runs; the database lets one sweep per period through (`sweep_claim`), so no
single process has to live for lost work to come back. Every action is safe to repeat: a step
is claimed by one worker only, and the planner's work holds a lease; `once_per` keeps two
sweeps from asking twice for one thing within a period. Times are compared on the database's
clock, which stamped the heartbeats: the machines' own clocks may disagree. What it may take
over: docs/write-protocol.md, rule 8.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from planner_ui.core.events import EventType
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import PlanProposal, Run, Step, Sweep
from planner_ui.stores import sql

from .evaluations import experiments_advance_running
from .events import event_append
from .leases import lease_held, once_per, seen_for
from .sender import TaskName, task_send_now


def sweep(by: str = "") -> dict[str, int]:
    """Hand out again what needs it, unless another process swept within the period; how many
    of each kind, for the worker's log (nothing when it was not this one's turn)."""
    now = sweep_claim(
        settings.AGENTSITE_SWEEP_S * 0.8, by or f"{socket.gethostname()}:{os.getpid()}"
    )
    if now is None:
        return {}  # another worker, or a beat, swept a moment ago
    return {
        "taken_over": _lost_steps(now),
        "queued_again": _unclaimed_steps(now),
        "plans_again": _lost_plans(now),
        "replans_again": _lost_replans(),
        "revisions_again": _lost_revisions(now),
        "experiments": experiments_advance_running(),
    }


def sweep_claim(period_s: float, by: str) -> datetime | None:
    """The database's time now, when no sweep started within `period_s` of it (and this one is
    recorded as started); None when one did.

    One statement, safe from any number of processes at once: PostgreSQL locks the row and
    checks the condition again on the version a concurrent writer left, SQLite writes one at
    a time. The row is made by the first sweep (a test's flush empties the table)."""
    since, since_params = sql.clock_ago(period_s)
    found = sql.rows(_CLAIM.format(clock=sql.clock(), since=since), [by, *since_params])
    return sql.datetime_of(found[0][0]) if found else None


_CLAIM = (
    f"INSERT INTO {sql.table(Sweep)} (id, swept_at, swept_by) VALUES (1, {{clock}}, %s) "
    "ON CONFLICT (id) DO UPDATE SET swept_at = excluded.swept_at, swept_by = excluded.swept_by "
    f"WHERE {sql.table(Sweep)}.swept_at <= {{since}} RETURNING swept_at"
)


def _lost_steps(now: datetime) -> int:
    lease = settings.AGENTSITE_STEP_LEASE_S
    lost = Step.objects.filter(
        status=StepStatus.RUNNING,
        heartbeat_at__lt=now - timedelta(seconds=lease),
        run__status=RunStatus.RUNNING,
    ).values_list("run_id", "step_id", "worker", "heartbeat_at")
    count = 0
    for run_id, step_id, worker, heartbeat_at in lost:
        assert heartbeat_at is not None  # older than the lease, so there is one
        if not once_per(lease, "takeover", run_id, step_id):
            continue
        with transaction.atomic():
            event_append(
                run_id,
                EventType.STEP_WORKER_LOST,
                {"worker": worker, "heartbeat_at": heartbeat_at.isoformat()},
                step_id=step_id,
            )
        task_send_now(TaskName.EXECUTE_STEP, run_id, step_id, takeover=True)
        count += 1
    return count


def _unclaimed_steps(now: datetime) -> int:
    after = settings.AGENTSITE_REQUEUE_AFTER_S
    unclaimed = Step.objects.filter(
        status=StepStatus.QUEUED,
        queued_at__lt=now - timedelta(seconds=after),
        run__status=RunStatus.RUNNING,
    ).values_list("run_id", "step_id")
    count = 0
    for run_id, step_id in unclaimed:
        # A duplicate of a message still in the queue does no harm: one claim wins.
        if once_per(after, "requeue", run_id, step_id):
            task_send_now(TaskName.EXECUTE_STEP, run_id, step_id)
            count += 1
    return count


def _lost_plans(now: datetime) -> int:
    after = settings.AGENTSITE_REQUEUE_AFTER_S
    waiting = Run.objects.filter(
        status=RunStatus.PLANNING,
        created_at__lt=now - timedelta(seconds=after),
        plan_versions__isnull=True,
    ).values_list("pk", flat=True)
    count = 0
    for run_id in waiting:
        if not lease_held("plan", run_id) and once_per(after, "plan", run_id):
            task_send_now(TaskName.PLAN_RUN, run_id)
            count += 1
    return count


def _lost_replans() -> int:
    after = settings.AGENTSITE_REQUEUE_AFTER_S
    replanning = Run.objects.filter(status=RunStatus.RUNNING, replanning=True).exclude(
        proposals__kind=PlanProposal.Kind.REPLAN, proposals__state=PlanProposal.State.READY
    )
    count = 0
    for run in replanning:
        # Nobody holds the re-plan's lease, and nobody has for a whole period: its message
        # was lost (a re-plan has no timestamp of its own to tell that by).
        if lease_held("replan", run.pk) or not seen_for(after, "replan", run.pk):
            continue
        failed = run.steps.filter(status=StepStatus.FAILED).order_by("-finished_at").first()
        task_send_now(TaskName.REPLAN, run.pk, failed.step_id if failed else "")
        count += 1
    return count


def _lost_revisions(now: datetime) -> int:
    after = settings.AGENTSITE_REQUEUE_AFTER_S
    pending = PlanProposal.objects.filter(
        state=PlanProposal.State.PENDING,
        kind=PlanProposal.Kind.REQUEST,
        created_at__lt=now - timedelta(seconds=after),
    ).values_list("pk", flat=True)
    count = 0
    for proposal_id in pending:
        if not lease_held("revision", proposal_id) and once_per(after, "revision", proposal_id):
            task_send_now(TaskName.REVISE_PLAN, proposal_id)
            count += 1
    return count
