"""A three-way merge of plans: a person's edits and the planner's revision, both kept.

base is the planner's last version, ours the current one (with what people changed since),
theirs the planner's proposal. A change one side made and the other did not touch is taken;
where both changed the same field of a step differently, or one removed a step the other
changed or newly depends on, the merge names a Conflict and the person chooses a side.

Arrows merge one by one, not as a field: an arrow either side added is kept, and one either
side removed is gone, so a removed dependency survives a revision that rewires elsewhere.
An arrow that went away only because its step was deleted follows that step's fate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .dag import find_cycle
from .errors import PlanValidationError
from .plan import Plan, PlanStep

Side = Literal["mine", "theirs"]
MINE: Side = "mine"
THEIRS: Side = "theirs"
SIDES: tuple[Side, ...] = (MINE, THEIRS)

# The step fields merged one by one; depends_on merges arrow by arrow (see above).
FIELDS = ("title", "instruction", "role", "tools")
# The conflict of a step one side removed: its key is the step id alone.
PRESENCE = "step"

Edge = tuple[str, str]  # (dependency, dependent), as in core.diff


class MergeError(PlanValidationError):
    """The merge cannot make a plan as chosen: a conflict is undecided, or it closes a cycle."""


@dataclass(frozen=True)
class Conflict:
    """One place where both sides changed the plan differently; the person picks a side."""

    key: str  # "goal", "<step id>" (kept or removed) or "<step id>:<field>"
    step_id: str  # "" for the goal
    field: str  # "goal", "step" (PRESENCE) or one of FIELDS
    reason: str  # one sentence: who changed what
    mine: str  # what keeping mine means, as the person reads it
    theirs: str  # what taking the planner's means


@dataclass(frozen=True)
class PlanMerge:
    base: Plan
    ours: Plan
    theirs: Plan
    conflicts: tuple[Conflict, ...]
    # What no conflict decides: field values and steps present whatever is chosen.
    _fields: Mapping[str, Mapping[str, Any]] = field(repr=False)
    _edges: frozenset[Edge] = field(repr=False)
    _edge_origin: Mapping[Edge, str] = field(repr=False)
    _goal: str = field(repr=False, default="")

    @property
    def conflict_keys(self) -> tuple[str, ...]:
        return tuple(c.key for c in self.conflicts)

    def plan(self, choices: Mapping[str, str]) -> Plan:
        """The merged plan with each conflict decided as `choices` says ("mine" or "theirs").

        Raises MergeError naming every undecided conflict, or the cycle the merge closed."""
        undecided = [c for c in self.conflicts if choices.get(c.key) not in SIDES]
        if undecided:
            raise MergeError(
                [
                    "choose “keep mine” or “take the planner's” for: "
                    + "; ".join(c.reason for c in undecided)
                ]
            )
        pick = {c.key: choices[c.key] for c in self.conflicts}

        def side(key: str) -> Plan:
            return self.ours if pick[key] == MINE else self.theirs

        goal = side("goal").goal if "goal" in pick else self._goal
        kept: dict[str, dict[str, Any]] = {}
        for step_id in _merged_order(self.ours, self.theirs):
            if step_id in pick:  # one side removed it: kept as the other has it, or gone
                chosen = {s.id: s for s in side(step_id).steps}.get(step_id)
                if chosen is not None:
                    kept[step_id] = chosen.model_dump()
            elif step_id in self._fields:
                values = {"id": step_id, **self._fields[step_id]}
                for name in FIELDS:
                    if f"{step_id}:{name}" in pick:
                        values[name] = getattr(side(f"{step_id}:{name}").step(step_id), name)
                kept[step_id] = values
        deps: dict[str, list[str]] = {}
        for step_id, values in kept.items():
            # The arrows in the order this step lists them, then the other side's new ones.
            listed = list(values["depends_on"]) + sorted(
                dep for dep, dependent in self._edges if dependent == step_id
            )
            deps[step_id] = [
                dep
                for dep in dict.fromkeys(listed)
                if dep in kept and (dep, step_id) in self._edges
            ]
        if cycle := find_cycle(deps):
            raise MergeError([self._cycle_message(cycle)])
        return Plan(
            goal=goal,
            steps=[PlanStep(**{**v, "depends_on": deps[i]}) for i, v in kept.items()],
        )

    def _cycle_message(self, cycle: list[str]) -> str:
        whose = {"mine": "your change", "theirs": "the planner's revision", "base": "the plan"}
        parts = []
        for dependent, dep in zip(cycle, cycle[1:], strict=False):
            origin = self._edge_origin.get((dep, dependent), "base")
            parts.append(f"'{dependent}' waits for '{dep}' ({whose[origin]})")
        return (
            "combining your changes with the planner's revision makes a cycle: "
            + " → ".join(cycle)
            + ": "
            + ", ".join(parts)
            + (
                ". Choose the other side of a conflict, or discard the revision"
                if self.conflicts
                else ". Discard the revision, remove one of these dependencies, and ask again"
            )
        )


def _edges(plan: Plan) -> set[Edge]:
    return {(dep, s.id) for s in plan.steps for dep in s.depends_on}


# A field the base has no value for: a step both sides added under the same id.
_ABSENT = object()


def _same(name: str, a: Any, b: Any) -> bool:
    if a is _ABSENT or b is _ABSENT:
        return a is b
    # Granted tools are a set: their order carries no meaning (as in core.diff).
    if name == "tools":
        return sorted(a) == sorted(b)
    return bool(a == b)


def _shown(name: str, value: Any) -> str:
    if name == "tools":
        return ", ".join(value) if value else "no tools"
    return str(value)


def _merged_order(ours: Plan, theirs: Plan) -> list[str]:
    """Our order, with each step only the planner has placed after the step before it there."""
    order = [s.id for s in ours.steps]
    placed = set(order)
    previous: str | None = None
    for step in theirs.steps:
        if step.id not in placed:
            at = order.index(previous) + 1 if previous is not None else 0
            order.insert(at, step.id)
            placed.add(step.id)
        previous = step.id
    return order


def _three_way(name: str, base: Any, mine: Any, theirs: Any) -> tuple[Any, bool]:
    """(value, conflicting): the side that changed wins; both changing it alike is no conflict."""
    if _same(name, mine, theirs) or _same(name, base, theirs):
        return mine, False
    if _same(name, base, mine):
        return theirs, False
    return mine, True


def _joined(step_id: str, before: set[Edge], after: set[Edge]) -> list[str]:
    """The steps an arrow newly joins to `step_id`, either way round."""
    return sorted({a if b == step_id else b for a, b in after - before if step_id in (a, b)})


def _field_conflict(
    step_id: str, name: str, new: bool, mine: PlanStep, planners: PlanStep
) -> Conflict:
    reason = (
        f"you and the planner both added a step '{step_id}', with a different {name}"
        if new
        else f"you and the planner both changed the {name} of step '{step_id}'"
    )
    return Conflict(
        f"{step_id}:{name}",
        step_id,
        name,
        reason,
        _shown(name, getattr(mine, name)),
        _shown(name, getattr(planners, name)),
    )


def _presence_conflict(
    step_id: str, before: PlanStep, kept: PlanStep, mine_kept: bool, joined: list[str]
) -> Conflict | None:
    """The conflict of a step one side removed, if the other side changed it or joined a step
    to it; None when the removal stands."""
    edited = [n for n in FIELDS if not _same(n, getattr(before, n), getattr(kept, n))]
    if not edited and not joined:
        return None
    who, whose = ("you", "your") if mine_kept else ("the planner", "the planner's")
    why = []
    if edited:
        why.append(f"{who} changed its " + ", ".join(edited))
    if joined:
        why.append(f"{whose} plan joins it to " + ", ".join(f"'{j}'" for j in joined))
    remover = "the planner removed" if mine_kept else "you removed"
    keep = f"keep step '{step_id}' as {who} {'have' if mine_kept else 'has'} it"
    drop = f"remove step '{step_id}'" + (
        ", and what waited for it no longer does" if joined else ""
    )
    return Conflict(
        step_id,
        step_id,
        PRESENCE,
        f"{remover} step '{step_id}', but " + " and ".join(why),
        keep if mine_kept else drop,
        drop if mine_kept else keep,
    )


def plan_merge(base: Plan, ours: Plan, theirs: Plan) -> PlanMerge:
    """Merge the planner's revision `theirs` into `ours`, both descended from `base`."""
    b = {s.id: s for s in base.steps}
    o = {s.id: s for s in ours.steps}
    t = {s.id: s for s in theirs.steps}
    eb, eo, et = _edges(base), _edges(ours), _edges(theirs)
    conflicts: list[Conflict] = []
    fields: dict[str, dict[str, Any]] = {}

    goal, conflicting = _three_way("goal", base.goal, ours.goal, theirs.goal)
    if conflicting:
        reason = "you and the planner both changed the goal"
        conflicts.append(Conflict("goal", "", "goal", reason, ours.goal, theirs.goal))

    for step_id in _merged_order(ours, theirs):
        mine, planners, before = o.get(step_id), t.get(step_id), b.get(step_id)
        if mine is not None and planners is not None:
            values: dict[str, Any] = {"depends_on": list(mine.depends_on)}
            for name in FIELDS:
                base_value = getattr(before, name) if before is not None else _ABSENT
                values[name], conflicting = _three_way(
                    name, base_value, getattr(mine, name), getattr(planners, name)
                )
                if conflicting:
                    conflicts.append(_field_conflict(step_id, name, before is None, mine, planners))
            fields[step_id] = values
        elif before is None:
            # Added by one side only: kept as that side made it.
            only = mine or planners
            assert only is not None
            fields[step_id] = only.model_dump(exclude={"id"})
        elif mine is not None or planners is not None:
            # One side removed it; the other kept it, perhaps changed or newly joined to.
            kept = mine or planners
            assert kept is not None
            joined = _joined(step_id, eb, eo if mine is not None else et)
            if found := _presence_conflict(step_id, before, kept, mine is not None, joined):
                conflicts.append(found)

    ours_ids, theirs_ids = set(o), set(t)
    # An arrow that went with its deleted step is not a decision about the arrow.
    removed_ours = {(d, s) for d, s in eb - eo if d in ours_ids and s in ours_ids}
    removed_theirs = {(d, s) for d, s in eb - et if d in theirs_ids and s in theirs_ids}
    added_ours, added_theirs = eo - eb, et - eb
    edges = ((eb - removed_ours - removed_theirs) | added_ours | added_theirs) & (eo | et)
    origin: dict[Edge, str] = {e: "base" for e in eb}
    origin.update({e: "theirs" for e in added_theirs})
    origin.update({e: "mine" for e in added_ours})
    return PlanMerge(
        base=base,
        ours=ours,
        theirs=theirs,
        conflicts=tuple(conflicts),
        _fields=fields,
        _edges=frozenset(edges),
        _edge_origin=origin,
        _goal=goal,
    )


def merge_preview(merge: PlanMerge, choices: Mapping[str, str] | None = None) -> Plan:
    """The merged plan with every undecided conflict as the person has it: what the diff shows
    around the choices still to make."""
    chosen = dict(choices or {})
    for key in merge.conflict_keys:
        if chosen.get(key) not in SIDES:
            chosen[key] = MINE
    return merge.plan(chosen)


def steps_named(conflicts: Iterable[Conflict]) -> list[str]:
    """The steps conflicts are about, once each, in order."""
    return list(dict.fromkeys(c.step_id for c in conflicts if c.step_id))
