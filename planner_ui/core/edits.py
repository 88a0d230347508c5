"""A person's edits to a plan before it runs. Each returns a new, validated plan; the input
plan is never changed, so a refused edit leaves everything as it was."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum

from .dag import find_cycle
from .errors import PlanValidationError
from .plan import ROLES, Plan, PlanStep
from .validation import validate_plan


class EditRefused(PlanValidationError):
    """An edit that cannot be applied; `.errors` says why."""


class DependentsPolicy(StrEnum):
    RECONNECT = "reconnect"  # dependents inherit the deleted step's own dependencies
    DETACH = "detach"  # dependents just lose the edge
    CASCADE = "cascade"  # dependents, transitively, are deleted too


@dataclass(frozen=True)
class UpdateStep:
    """Change any of title, instruction, role, tools; None leaves a field as it is."""

    step_id: str
    title: str | None = None
    instruction: str | None = None
    role: str | None = None
    tools: tuple[str, ...] | None = None


@dataclass(frozen=True)
class AddStep:
    step_id: str  # "" derives a unique slug from the title
    title: str
    instruction: str
    role: str
    tools: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeleteStep:
    step_id: str
    dependents: DependentsPolicy = DependentsPolicy.RECONNECT


@dataclass(frozen=True)
class AddDependency:
    """`step_id` will depend on `depends_on`: an arrow depends_on → step_id in the graph."""

    step_id: str
    depends_on: str


@dataclass(frozen=True)
class RemoveDependency:
    step_id: str
    depends_on: str


Edit = UpdateStep | AddStep | DeleteStep | AddDependency | RemoveDependency


def _refuse(message: str) -> EditRefused:
    return EditRefused([message])


def _require(plan: Plan, step_id: str) -> PlanStep:
    for step in plan.steps:
        if step.id == step_id:
            return step
    known = ", ".join(s.id for s in plan.steps)
    raise _refuse(f"there is no step '{step_id}'; steps: {known}")


def slug_for(title: str, taken: Collection[str]) -> str:
    """A step id from a title, unique among `taken`: 'Check sources' → 'check-sources'."""
    base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:32].strip("-") or "step"
    candidate, n = base, 2
    while candidate in taken or candidate == "synthesis":
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def _update(plan: Plan, edit: UpdateStep) -> list[dict]:
    step = _require(plan, edit.step_id)
    changes = {
        name: value
        for name, value in (
            ("title", edit.title),
            ("instruction", edit.instruction),
            ("role", edit.role),
            ("tools", list(edit.tools) if edit.tools is not None else None),
        )
        if value is not None and value != getattr(step, name)
    }
    if not changes:
        raise _refuse(f"nothing to change in step '{edit.step_id}'")
    return [
        {**s.model_dump(), **changes} if s.id == edit.step_id else s.model_dump()
        for s in plan.steps
    ]


def _add(plan: Plan, edit: AddStep) -> list[dict]:
    ids = [s.id for s in plan.steps]
    step_id = edit.step_id or slug_for(edit.title, ids)
    if step_id in ids:
        raise _refuse(f"a step '{step_id}' already exists")
    for dep in edit.depends_on:
        _require(plan, dep)
    new = {
        "id": step_id,
        "title": edit.title,
        "instruction": edit.instruction,
        "role": edit.role,
        "tools": list(edit.tools),
        "depends_on": list(dict.fromkeys(edit.depends_on)),
    }
    return [s.model_dump() for s in plan.steps] + [new]


def _delete(plan: Plan, edit: DeleteStep) -> list[dict]:
    doomed_step = _require(plan, edit.step_id)
    if len(plan.steps) == 1:
        raise _refuse(
            f"a plan needs at least one step; add another before deleting '{edit.step_id}'"
        )
    doomed = {edit.step_id}
    if edit.dependents == DependentsPolicy.CASCADE:
        grew = True
        while grew:
            grew = False
            for s in plan.steps:
                if s.id not in doomed and doomed & set(s.depends_on):
                    doomed.add(s.id)
                    grew = True
        if len(doomed) == len(plan.steps):
            raise _refuse(
                f"deleting '{edit.step_id}' with its dependents would leave no steps; "
                "choose 'reconnect' or 'detach'"
            )
    steps = []
    for s in plan.steps:
        if s.id in doomed:
            continue
        deps: list[str] = []
        for dep in s.depends_on:
            if dep != edit.step_id:
                deps.append(dep)
            elif edit.dependents == DependentsPolicy.RECONNECT:
                deps.extend(doomed_step.depends_on)
        steps.append({**s.model_dump(), "depends_on": list(dict.fromkeys(deps))})
    return steps


def _add_dependency(plan: Plan, edit: AddDependency) -> list[dict]:
    step = _require(plan, edit.step_id)
    _require(plan, edit.depends_on)
    if edit.step_id == edit.depends_on:
        raise _refuse(f"a step cannot depend on itself ('{edit.step_id}')")
    if edit.depends_on in step.depends_on:
        raise _refuse(f"step '{edit.step_id}' already depends on '{edit.depends_on}'")
    deps = plan.dependencies()
    deps[edit.step_id] = deps[edit.step_id] + [edit.depends_on]
    cycle = find_cycle(deps)
    if cycle:
        # find_cycle walks step → its dependency; show it as arrows of the graph instead.
        path = " → ".join(reversed(cycle))
        raise _refuse(f"adding {edit.depends_on} → {edit.step_id} would create a cycle: {path}")
    return [{**s.model_dump(), "depends_on": deps[s.id]} for s in plan.steps]


def _remove_dependency(plan: Plan, edit: RemoveDependency) -> list[dict]:
    step = _require(plan, edit.step_id)
    if edit.depends_on not in step.depends_on:
        raise _refuse(f"step '{edit.step_id}' does not depend on '{edit.depends_on}'")
    return [
        {**s.model_dump(), "depends_on": [d for d in s.depends_on if d != edit.depends_on]}
        if s.id == edit.step_id
        else s.model_dump()
        for s in plan.steps
    ]


_APPLY = {
    UpdateStep: _update,
    AddStep: _add,
    DeleteStep: _delete,
    AddDependency: _add_dependency,
    RemoveDependency: _remove_dependency,
}


def apply_edit(
    plan: Plan, edit: Edit, *, known_tools: Collection[str], roles: Collection[str] = ROLES
) -> Plan:
    """The plan after `edit`, validated like any plan; raises EditRefused and changes nothing."""
    steps = _APPLY[type(edit)](plan, edit)
    try:
        return validate_plan(
            {"goal": plan.goal, "steps": steps}, known_tools=known_tools, roles=roles
        )
    except PlanValidationError as exc:
        raise EditRefused(exc.errors) from exc


def describe_edit(edit: Edit) -> str:
    """One line for the version's note."""
    if isinstance(edit, UpdateStep):
        fields = [
            name
            for name in ("title", "instruction", "role", "tools")
            if getattr(edit, name) is not None
        ]
        return f"changed {', '.join(fields)} of step '{edit.step_id}'"
    if isinstance(edit, AddStep):
        return f"added step '{edit.step_id or slug_for(edit.title, ())}'"
    if isinstance(edit, DeleteStep):
        how = {
            DependentsPolicy.RECONNECT: "dependents reconnected",
            DependentsPolicy.DETACH: "dependents detached",
            DependentsPolicy.CASCADE: "dependents deleted too",
        }[edit.dependents]
        return f"deleted step '{edit.step_id}' ({how})"
    if isinstance(edit, AddDependency):
        return f"added dependency {edit.depends_on} → {edit.step_id}"
    return f"removed dependency {edit.depends_on} → {edit.step_id}"
