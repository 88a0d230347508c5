"""Re-planning after a failure: what a revision may change, and what must wait for a person.

The planner proposes a whole plan; these functions keep what is done or under way exactly as
it was, whatever the model wrote about it, so re-planning can never re-run finished work.
"""

from __future__ import annotations

from collections.abc import Collection, Set

from .plan import Plan, PlanStep


def merge_revision(current: Plan, revision: Plan, keep: Set[str]) -> Plan:
    """The revision, with every kept step taken verbatim from the current plan.

    A kept step the revision dropped is put back; one it rewrote is restored as it was.
    """
    merged: list[PlanStep] = []
    seen: set[str] = set()
    for step in revision.steps:
        merged.append(current.step(step.id) if step.id in keep else step)
        seen.add(step.id)
    for step in current.steps:
        if step.id in keep and step.id not in seen:
            merged.append(step)
    return Plan(goal=revision.goal or current.goal, steps=merged)


def changed_steps(current: Plan, revised: Plan, keep: Set[str]) -> list[str]:
    """Ids of the revised plan's steps that are new or differ from the current plan's."""
    before = {step.id: step for step in current.steps}
    return [
        step.id
        for step in revised.steps
        if step.id not in keep and (step.id not in before or before[step.id] != step)
    ]


def gated_changes(
    current: Plan, revised: Plan, keep: Set[str], irreversible: Collection[str]
) -> list[str]:
    """Changed or new steps that hold an irreversible tool: a person must see those first."""
    changed = set(changed_steps(current, revised, keep))
    return [
        step.id
        for step in revised.steps
        if step.id in changed and any(tool in irreversible for tool in step.tools)
    ]
