"""The one way tasks reach the workers: sent by their registered name, so no service imports
`planner_ui.tasks` (the tasks import the services they run, and only that way round).

A task is sent once its transaction commits, with the transaction's other tasks and the
producer they share (broadcast.after_commit), or at once where the work is committed already
(the sweep). A send the queue refuses is sent again in the background (handover.send_again)
and, when it is a run's work, the run's log says so: docs/write-protocol.md, rule 9.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from celery import current_app
from django.db import transaction

from planner_ui.core.events import EventType

from .broadcast import Refused, after_commit, tasks_send
from .events import event_append
from .handover import send_again

log = logging.getLogger(__name__)


class TaskName(StrEnum):
    """The tasks of planner_ui.tasks, by the names their workers know them by (a test checks
    that each is registered)."""

    PLAN_RUN = "planner_ui.tasks.plan_run"
    EXECUTE_STEP = "planner_ui.tasks.execute_step"
    REVISE_PLAN = "planner_ui.tasks.revise_plan_task"
    REPLAN = "planner_ui.tasks.replan_task"
    EXPERIMENT_ADVANCE = "planner_ui.tasks.experiment_advance"

    @property
    def short(self) -> str:
        return self.value.rsplit(".", 1)[-1]


# Two tries more on a connection that broke, then the send counts as refused.
_RETRY_POLICY = {"max_retries": 2}


@dataclass(frozen=True)
class TaskSend:
    """One task for the queue, sent with the producer its transaction's tasks share."""

    name: TaskName
    args: tuple[Any, ...]
    kwargs: dict[str, Any] | None = None

    def __call__(self, producer: Any) -> None:
        # send_task by name takes the same options as Task.apply_async, which ends in it; it
        # skips apply_async's check of the arguments against the task's signature.
        current_app.send_task(
            self.name.value,
            self.args,
            self.kwargs,
            producer=producer,
            retry=True,
            retry_policy=_RETRY_POLICY,
            # Every task here ignores its result (CELERY_TASK_IGNORE_RESULT), as apply_async
            # would have read off the task.
            ignore_result=True,
            # What Celery would write with its saferepr, 40 µs a task cheaper (ids and numbers).
            argsrepr=repr(self.args),
            kwargsrepr=repr(self.kwargs) if self.kwargs else "{}",
        )

    def __str__(self) -> str:
        return f"{self.name.short}{self.args}"


def _refused(send: TaskSend, run_id: int | None, step_id: str) -> Refused:
    """What to do when the queue refuses `send`: send it again for a while, then leave it to
    the sweep; a run's work says so in the run's log (the run waits meanwhile)."""

    def refused(exc: Exception) -> None:
        retry_s = send_again(send, str(send))
        if run_id is None:
            return  # no run to tell; tasks_send logged it
        with transaction.atomic():
            event_append(
                run_id,
                EventType.HANDOVER_DELAYED,
                {"task": send.name.short, "error": str(exc)[:300], "retry_s": retry_s},
                step_id=step_id,
            )

    return refused


def task_send(
    name: TaskName,
    *args: Any,
    run_id: int | None = None,
    step_id: str = "",
) -> None:
    """Send task `name(*args)` once the transaction commits (at once outside one), with the
    transaction's other tasks; `run_id` and `step_id` say whose work it is, for the run's
    log if the queue refuses it."""
    send = TaskSend(name, args)
    after_commit().enqueue(send, _refused(send, run_id, step_id))


def task_send_now(name: TaskName, *args: Any, **kwargs: Any) -> None:
    """Send task `name(*args, **kwargs)` now, whatever transaction is open: for work that is
    committed already (the sweep's). A refusal is sent again in the background, and the next
    sweep asks again anyway; the run's log is not told."""
    send = TaskSend(name, args, kwargs or None)
    tasks_send([(send, _refused(send, None, ""))])
