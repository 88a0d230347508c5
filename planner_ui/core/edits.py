"""A person's edits to a plan before it runs. Each returns a new, validated plan; the input
plan is never changed, so a refused edit leaves everything as it was."""

from __future__ import annotations

import re
import unicodedata
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .dag import Deps, ancestors
from .errors import PlanValidationError
from .plan import ROLES, SYNTHESIS_STEP_ID, Plan, PlanStep
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

# The fields UpdateStep can change, in the order describe_edit names them.
_UPDATABLE = ("title", "instruction", "role", "tools")

StepData = dict[str, Any]


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
    # Fold accents first so 'Résumé' becomes 'resume' rather than 'r-sum'.
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    # 32 characters leave room for a '-NN' suffix inside the 40 a step id may have.
    base = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")[:32].strip("-") or "step"
    candidate, n = base, 2
    while candidate in taken or candidate == SYNTHESIS_STEP_ID:
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def _dependency_path(deps: Deps, start: str, goal: str) -> list[str]:
    """The shortest chain start → its dependency → … → goal, following `deps` (breadth first).

    The caller has checked that `goal` is among the ancestors of `start`."""
    came_from: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            break
        for parent in deps.get(node, ()):
            if parent not in came_from:
                came_from[parent] = node
                queue.append(parent)
    path = [goal]
    while (previous := came_from[path[-1]]) is not None:
        path.append(previous)
    return path[::-1]


def _update(plan: Plan, edit: UpdateStep) -> list[StepData]:
    current = _require(plan, edit.step_id).model_dump()
    changes = _changes(current, edit)
    if not changes:
        raise _refuse(f"nothing to change in step '{edit.step_id}'")
    return [{**current, **changes} if s.id == edit.step_id else s.model_dump() for s in plan.steps]


def _changes(current: StepData, edit: UpdateStep) -> StepData:
    """The fields `edit` gives a value other than the step's: a form sends every field."""
    changes: StepData = {}
    for name in _UPDATABLE:
        value = getattr(edit, name)
        if value is None:
            continue
        if name == "tools":
            value = list(value)
            # Granted tools are a set (plan_diff agrees): a new order alone changes nothing.
            if sorted(value) == sorted(current["tools"]):
                continue
        elif value == current[name]:
            continue
        changes[name] = value
    return changes


def _add(plan: Plan, edit: AddStep) -> list[StepData]:
    ids = [s.id for s in plan.steps]
    step_id = edit.step_id or slug_for(edit.title, ids)
    if step_id in ids:
        raise _refuse(f"a step '{step_id}' already exists")
    for dep in edit.depends_on:
        if dep == step_id:
            raise _refuse(f"a step cannot depend on itself ('{step_id}')")
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


def _delete(plan: Plan, edit: DeleteStep) -> list[StepData]:
    deleted = _require(plan, edit.step_id)
    if len(plan.steps) == 1:
        raise _refuse(
            f"a plan needs at least one step; add another before deleting '{edit.step_id}'"
        )
    doomed = {edit.step_id}
    if edit.dependents == DependentsPolicy.CASCADE:
        deps = plan.dependencies()
        doomed |= {s.id for s in plan.steps if edit.step_id in ancestors(deps, s.id)}
        if len(doomed) == len(plan.steps):
            raise _refuse(
                f"deleting '{edit.step_id}' with its dependents would leave no steps; "
                "choose 'reconnect' or 'detach'"
            )
    steps = []
    for s in plan.steps:
        if s.id in doomed:
            continue
        kept: list[str] = []
        for dep in s.depends_on:
            if dep != edit.step_id:
                kept.append(dep)
            elif edit.dependents == DependentsPolicy.RECONNECT:
                kept.extend(deleted.depends_on)
        # Reconnecting can hand a step a dependency it already had: keep the first.
        steps.append({**s.model_dump(), "depends_on": list(dict.fromkeys(kept))})
    return steps


def _add_dependency(plan: Plan, edit: AddDependency) -> list[StepData]:
    step = _require(plan, edit.step_id)
    _require(plan, edit.depends_on)
    if edit.step_id == edit.depends_on:
        raise _refuse(f"a step cannot depend on itself ('{edit.step_id}')")
    if edit.depends_on in step.depends_on:
        raise _refuse(f"step '{edit.step_id}' already depends on '{edit.depends_on}'")
    deps = plan.dependencies()
    if edit.step_id in ancestors(deps, edit.depends_on):
        # depends_on already needs step_id; read backwards, that chain is a path of arrows
        # step_id → … → depends_on, which the new arrow depends_on → step_id would close.
        arrows = _dependency_path(deps, edit.depends_on, edit.step_id)[::-1] + [edit.step_id]
        raise _refuse(
            f"adding {edit.depends_on} → {edit.step_id} would create a cycle: " + " → ".join(arrows)
        )
    return [
        {**s.model_dump(), "depends_on": [*s.depends_on, edit.depends_on]}
        if s.id == edit.step_id
        else s.model_dump()
        for s in plan.steps
    ]


def _remove_dependency(plan: Plan, edit: RemoveDependency) -> list[StepData]:
    step = _require(plan, edit.step_id)
    if edit.depends_on not in step.depends_on:
        raise _refuse(f"step '{edit.step_id}' does not depend on '{edit.depends_on}'")
    return [
        {**s.model_dump(), "depends_on": [d for d in s.depends_on if d != edit.depends_on]}
        if s.id == edit.step_id
        else s.model_dump()
        for s in plan.steps
    ]


_APPLY: dict[type[Any], Callable[[Plan, Any], list[StepData]]] = {
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
    # Every branch builds fresh dicts from model_dump(), so `plan` itself is only ever read.
    steps = _APPLY[type(edit)](plan, edit)
    try:
        return validate_plan(
            {"goal": plan.goal, "steps": steps}, known_tools=known_tools, roles=roles
        )
    except PlanValidationError as exc:
        raise EditRefused(exc.errors) from exc


def describe_edit(edit: Edit, before: Plan | None = None) -> str:
    """One line for the version's note. Given the plan it was made on, an update names only
    the fields it changed, not every field the form sent."""
    if isinstance(edit, UpdateStep):
        fields = [name for name in _UPDATABLE if getattr(edit, name) is not None]
        step = next((s for s in before.steps if s.id == edit.step_id), None) if before else None
        if step is not None:
            changed = _changes(step.model_dump(), edit)
            fields = [name for name in fields if name in changed]
        if fields == ["title"]:
            return f"renamed step '{edit.step_id}'"
        if not fields:
            return f"nothing to change in step '{edit.step_id}'"
        return f"changed {', '.join(fields)} of step '{edit.step_id}'"
    if isinstance(edit, AddStep):
        # Without the plan, a derived id is the slug before any '-2' suffix a clash would add.
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


def started_steps_changed(before: Plan, after: Plan, started: Mapping[str, str]) -> list[str]:
    """Why `after` may not replace `before` while the run executes: it changes (re-wires
    included) or removes a step that has started (`started`: step id → its status); [] when it
    may."""
    old = {step.id: step for step in before.steps}
    new = {step.id: step for step in after.steps}
    problems = []
    for step_id, status in started.items():
        if step_id in old and new.get(step_id) != old[step_id]:
            verb = "deleted" if step_id not in new else "changed"
            problems.append(
                f"step '{step_id}' is {status.replace('_', ' ')}, so it can no longer be {verb}: "
                "only steps that have not started can be"
            )
    return problems
