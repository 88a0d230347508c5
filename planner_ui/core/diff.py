"""What changed between two plan versions, step by step and edge by edge."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .plan import Plan
from .step_record import graph_node

# The step fields a diff compares; id is the key and depends_on shows up as edges.
_FIELDS = ("title", "instruction", "role", "tools")


@dataclass(frozen=True)
class FieldChange:
    field: str  # "title" | "instruction" | "role" | "tools"
    old: Any
    new: Any


@dataclass(frozen=True)
class PlanDiff:
    added: tuple[str, ...]  # step ids, in the new plan's order
    removed: tuple[str, ...]  # step ids, in the old plan's order
    changed: tuple[tuple[str, tuple[FieldChange, ...]], ...]  # in the new plan's order
    edges_added: tuple[tuple[str, str], ...]  # (depends_on, step_id), sorted
    edges_removed: tuple[tuple[str, str], ...]
    goal_changed: tuple[str, str] | None  # (old goal, new goal)

    @property
    def is_empty(self) -> bool:
        return not (
            self.added
            or self.removed
            or self.changed
            or self.edges_added
            or self.edges_removed
            or self.goal_changed
        )


def _edges(plan: Plan) -> set[tuple[str, str]]:
    return {(dep, s.id) for s in plan.steps for dep in s.depends_on}


def plan_diff(old: Plan, new: Plan) -> PlanDiff:
    """Steps added, removed and changed, and arrows added and removed, from `old` to `new`.

    The arrows of an added or removed step count too, so the edges alone redraw the graph.
    """
    old_steps = {s.id: s for s in old.steps}
    new_steps = {s.id: s for s in new.steps}
    changed = []
    for step_id, step in new_steps.items():
        before = old_steps.get(step_id)
        if before is None:
            continue
        changes = []
        for name in _FIELDS:
            a, b = getattr(before, name), getattr(step, name)
            if name == "tools":
                # Granted tools are a set: their order carries no meaning.
                a, b = sorted(a), sorted(b)
            if a != b:
                changes.append(FieldChange(name, a, b))
        if changes:
            changed.append((step_id, tuple(changes)))
    old_edges, new_edges = _edges(old), _edges(new)
    return PlanDiff(
        added=tuple(i for i in new_steps if i not in old_steps),
        removed=tuple(i for i in old_steps if i not in new_steps),
        changed=tuple(changed),
        edges_added=tuple(sorted(new_edges - old_edges)),
        edges_removed=tuple(sorted(old_edges - new_edges)),
        goal_changed=(old.goal, new.goal) if old.goal != new.goal else None,
    )


def diff_marks(diff: PlanDiff, conflicted: Sequence[str] = ()) -> dict[str, str]:
    """Each step the diff touches → "added", "removed", "changed" or "conflict" (a step the
    person still has to choose about), for the graph's classes."""
    marks = {step_id: "added" for step_id in diff.added}
    marks.update({step_id: "removed" for step_id in diff.removed})
    marks.update({step_id: "changed" for step_id, _ in diff.changed})
    for _, step_id in diff.edges_added + diff.edges_removed:
        # A step whose inputs changed changed too, though none of its fields did.
        marks.setdefault(step_id, "changed")
    marks.update({step_id: "conflict" for step_id in conflicted})
    return marks


def diff_graph(old: Plan, new: Plan, conflicted: Sequence[str] = ()) -> dict[str, Any]:
    """The graph of `new` with the steps `old` had and `new` dropped drawn where they were, and
    `marks` (diff_marks) for graph.js's markDiff."""
    diff = plan_diff(old, new)
    shown = list(new.steps) + [old.step(step_id) for step_id in diff.removed]
    ids = {s.id for s in shown}
    return {
        "nodes": [
            graph_node(s, status="skipped" if s.id in diff.removed else "pending") for s in shown
        ],
        "edges": [
            {"source": dep, "target": s.id} for s in shown for dep in s.depends_on if dep in ids
        ],
        "marks": diff_marks(diff, conflicted),
    }
