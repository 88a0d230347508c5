"""Thin Celery tasks: they take ids, call a service and return.

Each task imports its service inside its body, as the services import this module to enqueue:
that keeps the import graph one-directional (services.scheduler → tasks)."""

from __future__ import annotations

import os
import socket

from celery import shared_task
from django.conf import settings


@shared_task(acks_late=True, reject_on_worker_lost=True)
def plan_run(run_id: int) -> None:
    from planner_ui.services.runs import run_plan

    run_plan(run_id)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def execute_step(self, run_id: int, step_id: str, takeover: bool = False) -> None:
    from planner_ui.services.steps import StepBusy, step_execute

    worker = f"{socket.gethostname()}:{os.getpid()}"
    redelivered = takeover or bool((self.request.delivery_info or {}).get("redelivered"))
    try:
        step_execute(run_id, step_id, worker, redelivered=redelivered)
    except StepBusy:
        # Its worker may be alive, or may have died a moment ago: look again after the lease.
        raise self.retry(
            kwargs={"takeover": True}, countdown=settings.AGENTSITE_STEP_LEASE_S
        ) from None


@shared_task(acks_late=True, reject_on_worker_lost=True)
def revise_plan_task(proposal_id: int) -> None:
    from planner_ui.services.proposals import proposal_make

    proposal_make(proposal_id)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def replan_task(run_id: int, failed_step_id: str) -> None:
    from planner_ui.services.replans import replan_make

    replan_make(run_id, failed_step_id)
