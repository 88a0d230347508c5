"""One line per task in a worker's log: which task, for which run and step, how it ended and
how long it took. Celery's own two lines per task ("received", "succeeded in") are quieted."""

from __future__ import annotations

import logging
import time
from typing import Any

from celery.signals import task_failure, task_postrun, task_prerun, task_retry

log = logging.getLogger("agentsite.tasks")
_started: dict[str, float] = {}

# Celery's per-task lines, which say less than ours.
logging.getLogger("celery.app.trace").setLevel(logging.WARNING)
logging.getLogger("celery.worker.strategy").setLevel(logging.WARNING)


def _what(task: Any, args: tuple, kwargs: dict) -> str:
    names = {
        "execute_step": ("run", "step"),
        "plan_run": ("run",),
        "replan_task": ("run", "after step"),
        "revise_plan_task": ("proposal",),
    }.get(task.name.rsplit(".", 1)[-1], ())
    parts = [f"{name} {value}" for name, value in zip(names, args, strict=False)]
    if kwargs.get("takeover"):
        parts.append("(take-over)")
    return " ".join([task.name.rsplit(".", 1)[-1], *parts])


@task_prerun.connect
def _prerun(task_id: str, **_: Any) -> None:
    _started[task_id] = time.monotonic()


@task_postrun.connect
def _postrun(
    task_id: str, task: Any, args: tuple, kwargs: dict, state: str, retval: Any = None, **_: Any
) -> None:
    took = time.monotonic() - _started.pop(task_id, time.monotonic())
    if state == "RETRY":
        return  # said by _retry
    if task.name.endswith(".sweep"):
        # Every few seconds: worth a line only when it handed something out again.
        done = {k: v for k, v in (retval or {}).items() if v} if isinstance(retval, dict) else {}
        if done:
            log.info("sweep: %s", ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in done.items()))
        return
    log.info("%s: %s in %.2f s", _what(task, args or (), kwargs or {}), state.lower(), took)


@task_retry.connect
def _retry(request: Any, reason: Any, **_: Any) -> None:
    log.info("%s[%s]: retried later (%s)", request.task, request.id, reason)


@task_failure.connect
def _failure(task_id: str, exception: BaseException, **_: Any) -> None:
    log.error("task %s raised %s: %s", task_id, type(exception).__name__, exception)
