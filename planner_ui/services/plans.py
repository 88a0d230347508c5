"""Plan versions: a person's edits, undo, import; each saved change is a new immutable version.

Every change names the version it was made against. A stale change (another tab or person saved
first) is refused with PlanConflict, so nobody silently overwrites anybody."""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction

from planner_ui.core import dag
from planner_ui.core.edits import (
    Edit,
    EditRefused,
    apply_edit,
    describe_edit,
    started_steps_changed,
)
from planner_ui.core.errors import InvalidTransition, PlanConflict, PlanValidationError
from planner_ui.core.events import EventType
from planner_ui.core.plan import SYNTHESIS_STEP_ID, SYNTHESIZER_ROLE, Plan
from planner_ui.core.run_rules import plan_change_refusal
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.core.validation import parse_plan_json, validate_plan
from planner_ui.models import PlanVersion, Run, Step
from planner_ui.selectors.tools import tools_for_run

from .events import event_append
from .scheduler import dependencies_count, dispatch_ready

__all__ = [
    "PlanConflict",
    "materialize_steps",
    "plan_edit",
    "plan_export",
    "plan_import",
    "plan_undo",
]


def materialize_steps(run: Run, plan: Plan) -> None:
    """Materialize the plan's steps, plus the synthesizer that joins the plan's last steps."""
    run.steps.all().delete()
    deps = plan.dependencies()
    synthesis_deps = dag.sinks(deps)
    dependents = dag.dependents({**deps, SYNTHESIS_STEP_ID: synthesis_deps})
    rows = [
        Step(
            run=run,
            step_id=step.id,
            position=position,
            title=step.title,
            instruction=step.instruction,
            role=step.role,
            tools=step.tools,
            depends_on=step.depends_on,
        )
        for position, step in enumerate(plan.steps)
    ]
    rows.append(
        Step(
            run=run,
            step_id=SYNTHESIS_STEP_ID,
            position=len(plan.steps),
            title="Assemble the deliverable",
            instruction="Combine the outputs of the plan into the final deliverable for the task.",
            role=SYNTHESIZER_ROLE,
            tools=[],
            depends_on=synthesis_deps,
        )
    )
    for row in rows:
        # Nothing has run yet: every dependency is still to succeed.
        row.dependents = dependents[row.step_id]
        row.waiting_on = len(row.depends_on)
    Step.objects.bulk_create(rows)


# A step as before its first attempt: what a re-plan that makes it again and a person's retry
# both clear (its usage totals stay: they were spent).
NOT_YET_RUN: dict[str, Any] = {
    "status": StepStatus.PENDING,
    "output": "",
    "error": "",
    "checkpoint": None,
    "started_at": None,
    "finished_at": None,
    "heartbeat_at": None,
    "queued_at": None,
    "worker": "",
    "model": "",
    "reused_from": None,
}


def steps_rematerialize(run: Run, plan: Plan, keep: set[str], dropped: str) -> None:
    """Re-make a running run's steps from `plan`: the `keep` ones (started or done) stay as
    they are, the others are made again as pending, and those the plan no longer has are
    skipped with the reason `dropped`."""
    existing = {s.step_id: s for s in run.steps.all()}
    for position, planned in enumerate(plan.steps):
        row = existing.get(planned.id)
        if row is not None and planned.id in keep:
            Step.objects.filter(pk=row.pk).update(position=position)
            continue
        fields = {
            "position": position,
            "title": planned.title,
            "instruction": planned.instruction,
            "role": planned.role,
            "tools": planned.tools,
            "depends_on": planned.depends_on,
            **NOT_YET_RUN,
        }
        if row is None:
            Step.objects.create(run=run, step_id=planned.id, **fields)
        else:
            # A failed step the revision keeps (reworded or not) runs again; its failure stays
            # in the event log and the plan version before this one.
            Step.objects.filter(pk=row.pk).update(**fields)
    planned_ids = {s.id for s in plan.steps}
    for step_id, row in existing.items():
        if step_id == SYNTHESIS_STEP_ID or step_id in planned_ids:
            continue
        before = f"failed: {row.error}; " if row.status == StepStatus.FAILED else ""
        Step.objects.filter(pk=row.pk).update(status=StepStatus.SKIPPED, error=f"{before}{dropped}")
        event_append(run.pk, EventType.STEP_SKIPPED, {"reason": dropped}, step_id=step_id)
    Step.objects.filter(run=run, step_id=SYNTHESIS_STEP_ID).update(
        position=len(plan.steps),
        depends_on=dag.sinks(plan.dependencies()),
        status=StepStatus.PENDING,
        error="",
    )


def plan_lock_for_change(run_id: int, base_version: int) -> tuple[Run, PlanVersion]:
    """The run, locked, and its current version, if its plan may change now: before approval,
    or while it runs (then only its steps that have not started; see plan_version_save)."""
    run = Run.objects.select_for_update().get(pk=run_id)
    if refusal := plan_change_refusal(run):
        raise InvalidTransition(refusal)
    current = run.plan_versions.order_by("-number").first()
    if current is None:  # pragma: no cover - awaiting approval always has a plan
        raise InvalidTransition("This run has no plan yet.")
    if base_version != current.number:
        raise PlanConflict(base_version, current.number)
    return run, current


def plan_version_save(run: Run, plan: Plan, author: str, note: str, number: int) -> PlanVersion:
    """A new version; before approval its steps are made afresh. While the run executes, the
    steps that have started stay as they are (the change may not touch them: it is refused
    whole, never half applied) and the others are made again and dispatched when ready."""
    # Steps under way or done (or, in a fork, reused): a change may not touch them.
    started = dict(run.steps.exclude(status=StepStatus.PENDING).values_list("step_id", "status"))
    if started:
        if started.pop(SYNTHESIS_STEP_ID, None):
            raise InvalidTransition(
                "The synthesizer is assembling the deliverable: the plan is complete and can no "
                "longer be changed."
            )
        current = run.plan_versions.latest("number")
        if problems := started_steps_changed(Plan.model_validate(current.plan), plan, started):
            raise EditRefused(problems)
    version = PlanVersion.objects.create(
        run=run, number=number, author=author, plan=plan.model_dump(), note=note
    )
    if started:
        steps_rematerialize(run, plan, set(started), f"removed by {author} in version {number}")
        dependencies_count(run)
    else:
        materialize_steps(run, plan)
    event_append(
        run.pk,
        EventType.PLAN_VERSION,
        {"number": number, "author": author, "note": note, "steps": len(plan.steps)},
    )
    if run.status == RunStatus.RUNNING:
        dispatch_ready(run)  # a step the change made ready starts now
    return version


def plan_edit(*, run_id: int, base_version: int, edit: Edit) -> PlanVersion:
    """Apply one edit made against `base_version`; refused edits leave the plan as it was."""
    with transaction.atomic():
        run, current = plan_lock_for_change(run_id, base_version)
        plan = Plan.model_validate(current.plan)
        new_plan = apply_edit(plan, edit, known_tools=sorted(tools_for_run(run)))
        return plan_version_save(
            run, new_plan, PlanVersion.Author.PERSON, describe_edit(edit, plan), current.number + 1
        )


def plan_undo(*, run_id: int, base_version: int) -> PlanVersion:
    """Undo the last change: a new version whose plan is the one before it."""
    with transaction.atomic():
        run, current = plan_lock_for_change(run_id, base_version)
        if current.number == 1:
            raise InvalidTransition("There is nothing to undo: this is the planner's first plan.")
        previous = run.plan_versions.get(number=current.number - 1)
        plan = Plan.model_validate(previous.plan)
        return plan_version_save(
            run,
            plan,
            PlanVersion.Author.PERSON,
            f"undid version {current.number} (back to version {previous.number})",
            current.number + 1,
        )


def plan_import(*, run_id: int, base_version: int, text: str) -> PlanVersion:
    """Replace the plan with one given as JSON, validated like any other plan."""
    if len(text) > 200_000:
        raise PlanValidationError([f"the file is {len(text)} characters; at most 200000"])
    with transaction.atomic():
        run, current = plan_lock_for_change(run_id, base_version)
        plan = validate_plan(parse_plan_json(text), known_tools=sorted(tools_for_run(run)))
        return plan_version_save(
            run, plan, PlanVersion.Author.PERSON, "imported from JSON", current.number + 1
        )


def plan_export(version: PlanVersion) -> str:
    return json.dumps(version.plan, indent=2, ensure_ascii=False) + "\n"
