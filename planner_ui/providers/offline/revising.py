"""Revising: a person's note that asks for more work, added to the current plan.

'and also research mate' is an action of its own: read as more of the task, it joined the last
clause ('then write a short summary and also research mate') and made a writer step. Read on
its own, it adds a researcher step that the plan's closing steps wait for, and every other step
stays as the current plan has it, as a model asked to revise would keep them."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from .planning import PlanBuilder
from .reading import clauses_of, is_action
from .words import unique_id

# What a note starts with before its action: 'and also', 'please', 'then'…
_LEADING = re.compile(r"^(?:(?:and|also|please|then|plus|additionally)\b[\s,]*)+", re.I)
# Verbs that reshape the plan rather than ask for work: such a note is read as before.
_RESHAPING = re.compile(
    r"^(?:make|use|keep|change|move|rename|remove|drop|delete|skip|merge|split|reorder|"
    r"replace|shorten|simplify|avoid|stop|let|give|do|don't|dont)\b",
    re.I,
)
# Roles whose steps gather material for the steps that close the plan.
_CLOSING_ROLES = ("writer", "critic")


def _current_plan(text: str) -> dict[str, Any] | None:
    try:
        plan = json.loads(text)
    except ValueError:
        return None
    if not isinstance(plan, dict) or not isinstance(plan.get("steps"), list):
        return None
    return plan


def revised_plan(
    task: str, tools: Sequence[str], current_plan: str, note: str
) -> dict[str, Any] | None:
    """The current plan with the steps the note's actions ask for, or None when the note asks
    for no action (then it is read as more of the task, as 'and mate' is)."""
    plan = _current_plan(current_plan)
    wanted = _LEADING.sub("", note.strip()).strip()
    if plan is None or not wanted:
        return None
    actions = clauses_of(wanted).actions
    if not actions or not all(is_action(a) and not _RESHAPING.match(a) for a in actions):
        return None
    steps: list[dict[str, Any]] = [dict(s) for s in plan["steps"] if isinstance(s, dict)]
    if len(steps) != len(plan["steps"]):
        return None
    # The new steps' own context names the whole task; their ids stay clear of the plan's.
    builder = PlanBuilder(task.strip(), tools)
    for action in actions:
        builder.expand_clause(action, [])
    added = builder.render()["steps"]
    used = {str(s.get("id")) for s in steps}
    renamed = {s["id"]: unique_id(s["id"], used) for s in added}
    for step in added:
        step["id"] = renamed[step["id"]]
        step["depends_on"] = [renamed[d] for d in step["depends_on"]]
    depended_on = {d for s in steps for d in s.get("depends_on", [])}
    sinks = [s for s in steps if s.get("id") not in depended_on]
    closing = [s for s in sinks if s.get("role") in _CLOSING_ROLES]
    new_sinks = {s["id"] for s in added} - {d for s in added for d in s["depends_on"]}
    for step in added:
        if step["id"] in new_sinks and step["role"] == "writer":
            # A piece of writing asked for last is written from everything the plan found.
            step["depends_on"] = step["depends_on"] + [s["id"] for s in sinks]
    gathered = [s["id"] for s in added if s["id"] in new_sinks and s["role"] != "writer"]
    for step in closing:
        # What the note asks to find out goes into the plan's closing pieces.
        step["depends_on"] = list(step.get("depends_on", [])) + gathered
    return {**plan, "steps": steps + added}
