"""Plan validation that reports every problem at once, in words a person can act on."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection
from typing import Any

from pydantic import ValidationError

from .bounds import JsonRefused, loads_bounded
from .dag import find_cycle
from .errors import PlanValidationError
from .plan import MAX_STEPS, ROLES, SYNTHESIS_STEP_ID, Plan


def _location(data: Any, loc: tuple[Any, ...]) -> str:
    """Name a pydantic error location after the step id when there is one."""
    if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
        index = loc[1]
        step_id = None
        try:
            step_id = data["steps"][index].get("id")
        except (KeyError, IndexError, TypeError, AttributeError):
            pass
        who = f"step '{step_id}'" if isinstance(step_id, str) and step_id else f"step {index + 1}"
        rest = ".".join(str(part) for part in loc[2:])
        return f"{who} {rest}".strip() if rest else who
    return ".".join(str(part) for part in loc) or "plan"


def _schema_errors(data: Any, err: ValidationError) -> list[str]:
    messages = []
    for e in err.errors():
        where = _location(data, tuple(e["loc"]))
        text = e["msg"]
        if e["type"] == "string_pattern_mismatch":
            text = "must be a short lowercase slug (letters, digits, '-' or '_', at most 40)"
        messages.append(f"{where}: {text}")
    return messages


def parse_plan_json(text: str) -> Any:
    """Parse a model's or a person's plan text; tolerate a fenced ```json block around it."""
    stripped = text.strip()
    # Models often wrap the JSON in a fence, sometimes after a sentence of their own.
    if fenced := re.search(r"```[A-Za-z]*\s*\n(.*)```", stripped, re.S):
        stripped = fenced.group(1)
    try:
        return loads_bounded(stripped)
    except JsonRefused as exc:
        raise PlanValidationError([f"the plan is refused: {exc}"]) from exc
    except json.JSONDecodeError as exc:
        raise PlanValidationError([f"the plan is not valid JSON: {exc}"]) from exc


def validate_plan(
    data: Any,
    *,
    known_tools: Collection[str],
    roles: Collection[str] = ROLES,
    max_steps: int = MAX_STEPS,
) -> Plan:
    """Return a Plan, or raise PlanValidationError listing every problem found."""
    if not isinstance(data, dict):
        raise PlanValidationError([f"a plan must be a JSON object, not {type(data).__name__}"])
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        raise PlanValidationError(_schema_errors(data, exc)) from exc

    errors: list[str] = []
    if not plan.steps:
        errors.append("the plan has no steps")
    if len(plan.steps) > max_steps:
        errors.append(f"the plan has {len(plan.steps)} steps; at most {max_steps} are allowed")

    counts = Counter(s.id for s in plan.steps)
    for step_id, count in counts.items():
        if count > 1:
            errors.append(f"duplicate step id '{step_id}' ({count} steps share it)")
    if SYNTHESIS_STEP_ID in counts:
        errors.append(f"step id '{SYNTHESIS_STEP_ID}' is reserved for the synthesizer")

    known_ids = sorted(counts)
    tool_list = ", ".join(sorted(known_tools)) or "none"
    role_list = ", ".join(sorted(roles))
    for s in plan.steps:
        if not s.instruction.strip():
            errors.append(f"step '{s.id}' has an empty instruction")
        if s.role not in roles:
            errors.append(f"step '{s.id}' has unknown role '{s.role}'; known roles: {role_list}")
        for tool in s.tools:
            if tool not in known_tools:
                errors.append(
                    f"step '{s.id}' grants unknown tool '{tool}'; known tools: {tool_list}"
                )
        for tool, count in Counter(s.tools).items():
            if count > 1:
                errors.append(f"step '{s.id}' grants tool '{tool}' more than once")
        for dep, count in Counter(s.depends_on).items():
            if count > 1:
                errors.append(f"step '{s.id}' depends on '{dep}' more than once")
        for dep in dict.fromkeys(s.depends_on):
            if dep == s.id:
                errors.append(f"step '{s.id}' depends on itself")
            elif dep not in counts:
                errors.append(
                    f"step '{s.id}' depends on unknown step '{dep}'; "
                    f"known steps: {', '.join(known_ids)}"
                )

    deps = {s.id: [d for d in s.depends_on if d != s.id] for s in plan.steps}
    cycle = find_cycle(deps) if len(counts) == len(plan.steps) else None
    if cycle:
        errors.append(f"the plan has a cycle: {' → '.join(cycle)}")
    if errors:
        raise PlanValidationError(errors)
    return plan
