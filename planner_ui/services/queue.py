"""Handing work to the Celery workers, after commit, without losing track of the run if the
queue is unreachable."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)


def enqueue_on_commit(run_id: int, task: Any, *args: Any) -> None:
    """Send `task(*args)` once the transaction commits; if Redis refuses, fail the run with a
    reason a person can act on instead of leaving it waiting forever."""

    def send() -> None:
        try:
            task.apply_async(args=args, retry=True, retry_policy={"max_retries": 2})
        except Exception as exc:  # kombu raises several types; all mean the same to the run
            log.exception("could not enqueue %s for run %s", task.name, run_id)
            from .runs import run_fail

            run_fail(
                run_id,
                f"Could not hand the work to a worker: the task queue at REDIS_URL "
                f"({settings.REDIS_URL}) did not accept it ({exc}). Start Redis and the workers "
                "(`make run` does both), then submit the task again.",
            )

    transaction.on_commit(send)
