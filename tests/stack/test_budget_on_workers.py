"""A budget over steps that run at once, on a real worker with four children: their calls never
pass it together (services.accounting holds what a call in flight may take)."""

from __future__ import annotations

import pytest

from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Run
from planner_ui.services.runs import run_approve_plan, run_create
from tests.conftest import wait_until

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]

TASK = "Compare Python and Go for writing a command-line tool"


def _run(owner, **options) -> Run:
    run = run_create(owner=owner, options=RunOptions(task=TASK, **options))
    wait_until(lambda: Run.objects.get(pk=run.pk).status != RunStatus.PLANNING, what="the plan")
    run_approve_plan(run.pk)
    return wait_until(
        lambda: (r := Run.objects.get(pk=run.pk)).is_finished and r, timeout=120, what="the end"
    )


def test_steps_running_at_once_never_pass_the_budget_together(celery_worker_process, make_user):
    whole = _run(make_user())
    assert whole.status == RunStatus.SUCCEEDED, whole.error
    first_layer = [s for s in whole.steps.all() if not s.depends_on]
    assert len(first_layer) >= 2, "the plan should start with steps that run at once"
    planner = whole.calls.get(step_id="")
    # The planner's call and every call of the steps that start together, but one token: each
    # of those calls, seeing the others' start but not their end, would have answered in full.
    budget = (
        planner.input_tokens
        + planner.output_tokens
        + sum(s.tokens_in + s.tokens_out for s in first_layer)
        - 1
    )
    # Another person's run: a planner is shown its person's earlier plans.
    run = _run(make_user("bob"), budget_tokens=budget)

    assert run.status == RunStatus.FAILED
    assert run.error.startswith(f"Stopped because its budget of {budget:,} tokens ")
    assert run.tokens_in + run.tokens_out <= budget
    statuses = dict(run.steps.values_list("step_id", "status"))
    assert StepStatus.FAILED not in statuses.values(), statuses
    assert StepStatus.SUCCEEDED in statuses.values(), statuses
    assert set(run.steps.values_list("budget_held_tokens", flat=True)) == {0}
