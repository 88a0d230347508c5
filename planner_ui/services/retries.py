"""A person goes back over a run: retries a step that finished or failed (and, if they ask, the
steps after it), or forks a new run from a step, reusing what came before it.

Nothing irreversible is performed again behind a person's back: a retried step's calls go
through the run's gates like any other, and a fork never repeats a call its original made: the
receipts of the steps it reuses come along, marked as reused, and a step it runs again that
asks for the same call (tool and arguments) gets the original's result (services.outbox).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from planner_ui.core import dag
from planner_ui.core.errors import InvalidTransition
from planner_ui.core.events import EventType
from planner_ui.core.plan import SYNTHESIS_STEP_ID, Plan
from planner_ui.core.run_rules import (
    downstream_retry_refusal,
    fork_refusal,
    fork_step_refusal,
    retry_refusal,
    step_retry_refusal,
)
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import PlanVersion, Run, RunFile, Step, ToolReceipt

from .events import event_append, events_append
from .outcomes import run_outcome_clear
from .plans import NOT_YET_RUN, materialize_steps
from .scheduler import dependencies_count, dispatch_ready
from .search import search_index_run

MAX_INSTRUCTION_CHARS = 4000


def step_retry(
    *,
    run_id: int,
    step_id: str,
    user: User,
    instruction: str = "",
    downstream: bool = True,
) -> Run:
    """Run a finished or failed step again, with an edited instruction if given, and with
    `downstream` the steps after it too. A finished run opens again for it."""
    instruction = instruction.strip()
    if len(instruction) > MAX_INSTRUCTION_CHARS:
        raise InvalidTransition(
            f"The instruction is {len(instruction)} characters long; at most "
            f"{MAX_INSTRUCTION_CHARS} are allowed."
        )
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id, owner=user)
        if refusal := retry_refusal(run):
            raise InvalidTransition(refusal)
        steps = {s.step_id: s for s in run.steps.all()}
        step = steps.get(step_id)
        if step is None:
            raise InvalidTransition(f"This run has no step '{step_id}'.")
        if refusal := step_retry_refusal(step_id, step.status):
            raise InvalidTransition(refusal)
        again = [step_id]
        if downstream:
            deps = {s.step_id: s.depends_on for s in steps.values()}
            again += sorted(dag.descendants(deps, step_id), key=lambda s: steps[s].position)
            if refusal := downstream_retry_refusal((s, steps[s].status) for s in again[1:]):
                raise InvalidTransition(refusal)
        if instruction and instruction != step.instruction:
            _edited_version(run, step, instruction, user)
        Step.objects.filter(run=run, step_id__in=again).update(
            **NOT_YET_RUN, retries=F("retries") + 1
        )
        if run.is_finished:
            run.move_to(RunStatus.RUNNING)
            run.finished_at = None
            run.error = ""
            run_outcome_clear(run)
            run.save()
            event_append(run.pk, EventType.RUN_STATUS, {"status": run.status})
        event_append(
            run.pk,
            EventType.STEP_RETRIED,
            {"by": user.get_username(), "again": again, "edited": bool(instruction)},
            step_id=step_id,
        )
        dependencies_count(run)
        dispatch_ready(run)
    return run


def _edited_version(run: Run, step: Step, instruction: str, user: User) -> None:
    current = run.plan_versions.latest("number")
    plan = Plan.model_validate(current.plan)
    if step.step_id != SYNTHESIS_STEP_ID:
        edited = [
            s.model_copy(update={"instruction": instruction}) if s.id == step.step_id else s
            for s in plan.steps
        ]
        plan = plan.model_copy(update={"steps": edited})
    number = current.number + 1
    note = f"retry of '{step.step_id}' with an edited instruction, by {user.get_username()}"
    PlanVersion.objects.create(
        run=run, number=number, author=PlanVersion.Author.PERSON, plan=plan.model_dump(), note=note
    )
    Step.objects.filter(pk=step.pk).update(instruction=instruction)
    event_append(
        run.pk,
        EventType.PLAN_VERSION,
        {"number": number, "author": "person", "note": note, "steps": len(plan.steps)},
    )


def run_fork(*, run_id: int, step_id: str, user: User) -> Run:
    """A new run with the same plan, that reuses the outputs of the steps `step_id` depends on
    (directly or not) and runs the rest; it waits for the person's approval first, so they
    may change what is not reused. The steps run again get keys of their own run, so their
    new irreversible calls ask (or follow the policy) afresh, while a call the original made
    is not made again (services.outbox); the reused ones' receipts come along under keys that
    no call of the fork can claim."""
    original = Run.objects.get(pk=run_id, owner=user)
    if refusal := fork_refusal(original):
        raise InvalidTransition(refusal)
    steps = {s.step_id: s for s in original.steps.all()}
    depends_on = {s.step_id: s.depends_on for s in steps.values()}
    statuses = {s.step_id: s.status for s in steps.values()}
    if refusal := fork_step_refusal(step_id, depends_on, statuses):
        raise InvalidTransition(refusal)
    before = dag.ancestors(depends_on, step_id)
    version = original.plan_versions.latest("number")
    plan = Plan.model_validate(version.plan)
    with transaction.atomic():
        fork = Run.objects.create(
            owner=user,
            task=original.task,
            status=RunStatus.AWAITING_PLAN_APPROVAL,
            forked_from=original,
            fork_step=step_id,
            routes=original.routes,
            executor_model=original.executor_model,
            planner_model=original.planner_model,
            tool_policy=original.tool_policy,
            auto_tools=original.auto_tools,
            allowed_hosts=original.allowed_hosts,
            budget_tokens=original.budget_tokens,
            budget_usd=original.budget_usd,
            replan_mode=original.replan_mode,
            max_replans=original.max_replans,
        )
        note = f"forked from run {original.pk} at step '{step_id}'"
        PlanVersion.objects.create(
            run=fork, number=1, author=PlanVersion.Author.PERSON, plan=plan.model_dump(), note=note
        )
        materialize_steps(fork, plan)
        search_index_run(fork, steps=[])
        now = timezone.now()
        for reused in before:
            old = steps[reused]
            Step.objects.filter(run=fork, step_id=reused).update(
                status=StepStatus.SUCCEEDED,
                output=old.output,
                model=old.model,
                started_at=now,
                finished_at=now,
                reused_from=original,
            )
        events_append(
            fork.pk,
            [
                (EventType.STEP_REUSED, {"from_run": original.pk}, reused)
                for reused in sorted(before)
            ],
        )
        ToolReceipt.objects.bulk_create(
            ToolReceipt(
                run=fork,
                step_id=receipt.step_id,
                idempotency_key=f"{receipt.idempotency_key}:reused-by-run{fork.pk}",
                tool=receipt.tool,
                effect=receipt.effect,
                arguments=receipt.arguments,
                decision=receipt.decision,
                authorized_by=receipt.authorized_by,
                state=receipt.state,
                result=receipt.result,
                is_error=receipt.is_error,
                finished_at=receipt.finished_at,
                reused_from=receipt,
            )
            for receipt in original.receipts.filter(step_id__in=before)
        )
        # The files the reused steps wrote last; a file a later step overwrote is not theirs
        # any more, and the steps that run again write it afresh.
        RunFile.objects.bulk_create(
            RunFile(
                run=fork,
                path=file.path,
                content=file.content,
                size=file.size,
                sha256=file.sha256,
                step_id=file.step_id,
            )
            for file in original.files.filter(step_id__in=before)
        )
        dependencies_count(fork)
        event_append(fork.pk, EventType.RUN_STATUS, {"status": fork.status})
        event_append(
            fork.pk,
            EventType.PLAN_VERSION,
            {"number": 1, "author": "person", "note": note, "steps": len(plan.steps)},
        )
    return fork
