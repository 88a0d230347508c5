"""Run lifecycle: create, plan, approve, finish."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from planner_ui.agents.planner import make_plan
from planner_ui.core import dag
from planner_ui.core.errors import AgentError, InvalidTransition, ProviderError
from planner_ui.core.plan import SYNTHESIS_STEP_ID, SYNTHESIZER_ROLE, Plan
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import PlanVersion, Run, Step
from planner_ui.providers import provider_for
from planner_ui.tools import REGISTRY

from .events import event_append
from .queue import enqueue_on_commit

log = logging.getLogger(__name__)


class RunInputError(AgentError):
    """A person's input for a run was refused; the message says why."""


def run_create(*, owner: AbstractBaseUser, task: str, auto_approve: bool = False) -> Run:
    task = task.strip()
    if not task:
        raise RunInputError("Describe the task: it is empty.")
    limit = settings.AGENTSITE_MAX_TASK_CHARS
    if len(task) > limit:
        raise RunInputError(
            f"The task is {len(task)} characters long; at most {limit} are allowed."
        )
    from planner_ui.tasks import plan_run

    with transaction.atomic():
        run = Run.objects.create(owner=owner, task=task, auto_approve=auto_approve)
        event_append(run.pk, "run.status", {"status": run.status})
        enqueue_on_commit(run.pk, plan_run, run.pk)
    return run


def materialize_steps(run: Run, plan: Plan) -> None:
    """Materialize the plan's steps, plus the synthesizer that joins the plan's last steps."""
    run.steps.all().delete()
    deps = plan.dependencies()
    for position, step in enumerate(plan.steps):
        Step.objects.create(
            run=run,
            step_id=step.id,
            position=position,
            title=step.title,
            instruction=step.instruction,
            role=step.role,
            tools=step.tools,
            depends_on=step.depends_on,
        )
    Step.objects.create(
        run=run,
        step_id=SYNTHESIS_STEP_ID,
        position=len(plan.steps),
        title="Assemble the deliverable",
        instruction="Combine the outputs of the plan into the final deliverable for the task.",
        role=SYNTHESIZER_ROLE,
        tools=[],
        depends_on=dag.sinks(deps),
    )


def run_plan(run_id: int) -> None:
    """Ask the planner for a plan (with one repair); store it or fail the run with the errors."""
    run = Run.objects.get(pk=run_id)
    if run.status != RunStatus.PLANNING or run.plan_versions.exists():
        return  # a redelivered task: planning already happened
    try:
        provider = provider_for("planner")
        result = make_plan(provider, run.task, [tool.spec() for tool in REGISTRY.values()])
    except ProviderError as exc:
        run_fail(run_id, f"The planner failed, so nothing ran: {exc}")
        return
    tokens_in = sum(a.usage.input_tokens for a in result.attempts)
    tokens_out = sum(a.usage.output_tokens for a in result.attempts)
    for number, attempt in enumerate(result.attempts, start=1):
        if attempt.errors:
            event_append(run_id, "plan.invalid", {"attempt": number, "errors": attempt.errors})
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        run.planner_model = result.model
        run.tokens_in += tokens_in
        run.tokens_out += tokens_out
        run.model_calls += len(result.attempts)
        if result.plan is None:
            run.save()
            errors = "; ".join(result.errors)
            run_fail(run_id, f"The planner's plan was invalid twice, so nothing ran: {errors}")
            return
        version = PlanVersion.objects.create(
            run=run, number=1, author=PlanVersion.Author.PLANNER, plan=result.plan.model_dump()
        )
        materialize_steps(run, result.plan)
        run.move_to(RunStatus.AWAITING_PLAN_APPROVAL)
        run.save()
        event_append(
            run_id,
            "plan.version",
            {
                "number": version.number,
                "author": version.author,
                "model": result.model,
                "steps": len(result.plan.steps),
            },
        )
        event_append(run_id, "run.status", {"status": run.status})
    if run.auto_approve:
        run_approve_plan(run_id)


def run_approve_plan(run_id: int, version_number: int | None = None) -> Run:
    """Approve the latest plan version and dispatch every step that is ready.

    With `version_number`, approve exactly that version: if the plan changed since the person
    looked at it, the approval is refused instead of running something they did not see."""
    from .plans import PlanConflict
    from .steps import dispatch_ready_steps

    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.status != RunStatus.AWAITING_PLAN_APPROVAL:
            raise InvalidTransition(
                f"This run is {run.get_status_display()}, so its plan cannot be approved now."
            )
        version = run.plan_versions.order_by("-number").first()
        if version_number is not None and version_number != version.number:
            raise PlanConflict(version_number, version.number)
        run.approved_plan = version
        run.move_to(RunStatus.RUNNING)
        run.started_at = timezone.now()
        run.executor_model = provider_for("executor").label
        run.save()
        event_append(run_id, "plan.approved", {"number": version.number})
        event_append(run_id, "run.status", {"status": run.status})
        dispatch_ready_steps(run)
    return run


def run_fail(run_id: int, error: str) -> None:
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.is_finished:
            return
        run.move_to(RunStatus.FAILED)
        run.error = error
        run.finished_at = timezone.now()
        run.save()
        run.steps.filter(status=StepStatus.PENDING).update(status=StepStatus.SKIPPED)
        event_append(run_id, "run.status", {"status": run.status, "error": error})


def run_finish_if_done(run: Run) -> None:
    """Close a running run once no step is pending, queued or running. Caller holds the lock."""
    steps = list(run.steps.all())
    if any(s.status in (StepStatus.PENDING, StepStatus.QUEUED, StepStatus.RUNNING) for s in steps):
        return
    failed = [s for s in steps if s.status == StepStatus.FAILED]
    run.finished_at = timezone.now()
    if failed:
        run.move_to(RunStatus.FAILED)
        run.error = "; ".join(f"step '{s.step_id}' failed: {s.error}" for s in failed)
    else:
        run.move_to(RunStatus.SUCCEEDED)
        synthesis = next((s for s in steps if s.step_id == SYNTHESIS_STEP_ID), None)
        run.result = synthesis.output if synthesis else ""
    run.save()
    event_append(run.pk, "run.status", {"status": run.status, "error": run.error})
