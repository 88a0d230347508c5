"""Thin Celery tasks: they take ids, call a service and return.

The services send them by name (services.sender.TaskName) and never import this module; each
task imports its service inside its body, so that importing this module (Celery's
autodiscovery) loads no models."""

from __future__ import annotations

import os
import socket

from celery import shared_task
from django.conf import settings


@shared_task(acks_late=True, reject_on_worker_lost=True)
def plan_run(run_id: int) -> None:
    from planner_ui.services.leases import task_lease
    from planner_ui.services.runs import run_plan

    with task_lease("plan", run_id) as mine:
        if mine:  # else a live worker is planning it already
            run_plan(run_id)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def execute_step(self, run_id: int, step_id: str, takeover: bool = False) -> None:
    from planner_ui.services.steps import StepBusy, step_execute

    # The worker's node name (machine-a@host) and process: which machine ran a step.
    worker = f"{self.request.hostname or socket.gethostname()}:{os.getpid()}"
    redelivered = takeover or bool((self.request.delivery_info or {}).get("redelivered"))
    try:
        step_execute(run_id, step_id, worker, redelivered=redelivered, carry_for_s=_carry_for_s())
    except StepBusy:
        # Its worker may be alive, or may have died a moment ago: look again after the lease.
        raise self.retry(
            kwargs={"takeover": True}, countdown=settings.AGENTSITE_STEP_LEASE_S
        ) from None


def _carry_for_s() -> float:
    """How long a step's task carries on to the steps it makes ready: half the time after which
    the broker would hand its unacknowledged message to another worker."""
    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    return float(options.get("visibility_timeout", 3600)) / 2


@shared_task(acks_late=True, reject_on_worker_lost=True)
def revise_plan_task(proposal_id: int) -> None:
    from planner_ui.services.leases import task_lease
    from planner_ui.services.proposals import proposal_make

    with task_lease("revision", proposal_id) as mine:
        if mine:
            proposal_make(proposal_id)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def replan_task(run_id: int, failed_step_id: str) -> None:
    from planner_ui.services.leases import task_lease
    from planner_ui.services.replans import replan_make

    with task_lease("replan", run_id) as mine:
        if mine:
            replan_make(run_id, failed_step_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def experiment_advance(experiment_id: int) -> None:
    from planner_ui.services.evaluations import experiment_advance

    experiment_advance(experiment_id)


@shared_task(ignore_result=True)
def sweep() -> dict[str, int]:
    from planner_ui.services.sweep import sweep

    return sweep()


@shared_task(ignore_result=True)
def template_schedules() -> int:
    from planner_ui.services.templates import template_schedules_due

    return template_schedules_due()
