"""Plan versions: a person's edits, undo, import; each saved change is a new immutable version.

Every change names the version it was made against. A stale change (another tab or person saved
first) is refused with PlanConflict, so nobody silently overwrites anybody."""

from __future__ import annotations

import json

from django.db import transaction

from planner_ui.core import dag
from planner_ui.core.edits import Edit, apply_edit, describe_edit
from planner_ui.core.errors import InvalidTransition, PlanConflict, PlanValidationError
from planner_ui.core.plan import SYNTHESIS_STEP_ID, SYNTHESIZER_ROLE, Plan
from planner_ui.core.status import RunStatus
from planner_ui.core.validation import parse_plan_json, validate_plan
from planner_ui.models import PlanVersion, Run, Step
from planner_ui.tools import tool_names

from .events import event_append

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


def _lock_for_change(run_id: int, base_version: int) -> tuple[Run, PlanVersion]:
    run = Run.objects.select_for_update().get(pk=run_id)
    if run.status != RunStatus.AWAITING_PLAN_APPROVAL:
        raise InvalidTransition(
            f"This run is {run.get_status_display()}: a plan can only be changed before it is "
            "approved."
        )
    current = run.plan_versions.order_by("-number").first()
    if current is None:  # pragma: no cover - awaiting approval always has a plan
        raise InvalidTransition("This run has no plan yet.")
    if base_version != current.number:
        raise PlanConflict(base_version, current.number)
    return run, current


def _save_version(run: Run, plan: Plan, author: str, note: str, number: int) -> PlanVersion:
    version = PlanVersion.objects.create(
        run=run, number=number, author=author, plan=plan.model_dump(), note=note
    )
    materialize_steps(run, plan)
    event_append(
        run.pk,
        "plan.version",
        {"number": number, "author": author, "note": note, "steps": len(plan.steps)},
    )
    return version


def plan_edit(*, run_id: int, base_version: int, edit: Edit) -> PlanVersion:
    """Apply one edit made against `base_version`; refused edits leave the plan as it was."""
    with transaction.atomic():
        run, current = _lock_for_change(run_id, base_version)
        plan = Plan.model_validate(current.plan)
        new_plan = apply_edit(plan, edit, known_tools=tool_names())
        return _save_version(
            run, new_plan, PlanVersion.Author.PERSON, describe_edit(edit), current.number + 1
        )


def plan_undo(*, run_id: int, base_version: int) -> PlanVersion:
    """Undo the last change: a new version whose plan is the one before it."""
    with transaction.atomic():
        run, current = _lock_for_change(run_id, base_version)
        if current.number == 1:
            raise InvalidTransition("There is nothing to undo: this is the planner's first plan.")
        previous = run.plan_versions.get(number=current.number - 1)
        plan = Plan.model_validate(previous.plan)
        return _save_version(
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
        run, current = _lock_for_change(run_id, base_version)
        plan = validate_plan(parse_plan_json(text), known_tools=tool_names())
        return _save_version(
            run, plan, PlanVersion.Author.PERSON, "imported from JSON", current.number + 1
        )


def plan_export(version: PlanVersion) -> str:
    return json.dumps(version.plan, indent=2, ensure_ascii=False) + "\n"
