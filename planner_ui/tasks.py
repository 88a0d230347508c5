"""Thin Celery tasks: they take ids, call a service and return."""

from __future__ import annotations

import os
import socket

from celery import shared_task

from planner_ui.services.proposals import proposal_make
from planner_ui.services.runs import run_plan
from planner_ui.services.steps import step_execute


@shared_task(acks_late=True, reject_on_worker_lost=True)
def plan_run(run_id: int) -> None:
    run_plan(run_id)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True)
def execute_step(self, run_id: int, step_id: str) -> None:
    worker = f"{socket.gethostname()}:{os.getpid()}"
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    step_execute(run_id, step_id, worker, redelivered=redelivered)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def revise_plan_task(proposal_id: int) -> None:
    proposal_make(proposal_id)
