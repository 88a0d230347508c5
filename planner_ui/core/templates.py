"""Plan templates: a reviewed plan and its task, with `{name}` placeholders a person fills in
to run it again with new inputs.

A placeholder is `{name}` (lowercase letters, digits, `_`) in the task, the plan's goal or a
step's title or instruction; `{{name}}` stands for the literal text `{name}`. Ids, roles,
tools and dependencies are never templated: a value may change what a step is about, never
the shape of the graph or what it may call.

Values are data. Substitution is one pass over the template's text, so a value holding
`{other}` stays those characters and is not filled in again, and the filled plan goes
through the same validation as any plan (core.validation).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from .diff import PlanDiff, plan_diff
from .errors import AgentError, PlanValidationError
from .plan import Plan
from .validation import validate_plan

PARAMETER_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,39}$"
_NAME = r"[a-z][a-z0-9_]{0,39}"
# An escaped placeholder first, so `{{city}}` is never read as `{` + `{city}` + `}`.
_TOKEN = re.compile(r"\{\{(" + _NAME + r")\}\}|\{(" + _NAME + r")\}")
MAX_PARAMETERS = 20
MAX_VALUE_CHARS = 2000
DEFAULT_MAX_LENGTH = 500

ParameterType = Literal["text", "number", "integer", "email", "url", "date", "choice"]
PARAMETER_TYPES: tuple[str, ...] = ParameterType.__args__  # type: ignore[attr-defined]

_EMAIL = re.compile(r"^[^@\s]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")


class TemplateParameter(BaseModel):
    """One input of a template: its type, its default (None: the person must give a value)
    and its check (a pattern for text, a range for numbers, the choices for a choice)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=PARAMETER_NAME_PATTERN, description="As in {name}.")
    type: ParameterType = "text"
    label: str = Field(
        default="", max_length=120, description="What the form asks; the name if empty."
    )
    default: str | None = Field(default=None, max_length=MAX_VALUE_CHARS)
    pattern: str = Field(
        default="", max_length=200, description="Text: a regular expression to match."
    )
    minimum: float | None = Field(default=None, allow_inf_nan=False)
    maximum: float | None = Field(default=None, allow_inf_nan=False)
    max_length: int = Field(default=DEFAULT_MAX_LENGTH, ge=1, le=MAX_VALUE_CHARS)
    choices: list[str] = Field(default_factory=list, max_length=50)

    @property
    def shown_label(self) -> str:
        return self.label or self.name.replace("_", " ").capitalize()

    @property
    def required(self) -> bool:
        return self.default is None


class TemplateSpec(BaseModel):
    """What a template version holds: the task and plan with placeholders, and its inputs."""

    model_config = ConfigDict(extra="forbid")

    task: str
    plan: Plan
    parameters: list[TemplateParameter] = Field(default_factory=list)

    def parameter(self, name: str) -> TemplateParameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise KeyError(name)


class ParameterError(AgentError):
    """Values (or a template's parameters) were refused; `problems` maps each parameter's
    name ("" for the template as a whole) to why, so a form shows it at its field."""

    def __init__(self, problems: dict[str, str]) -> None:
        self.problems = problems
        super().__init__(
            "; ".join(f"{name}: {why}" if name else why for name, why in problems.items())
        )

    def __reduce__(self) -> tuple[type[ParameterError], tuple[dict[str, str]]]:
        return (type(self), (self.problems,))


class FilledTemplate(BaseModel):
    task: str
    plan: Plan
    values: dict[str, str]


# --- placeholders ----------------------------------------------------------------------------


def placeholders(text: str) -> list[str]:
    """The names of the placeholders in `text`, in order of first appearance."""
    return list(dict.fromkeys(m.group(2) for m in _TOKEN.finditer(text) if m.group(2)))


def _texts(task: str, plan: Plan) -> list[str]:
    return [task, plan.goal, *(t for s in plan.steps for t in (s.title, s.instruction))]


def template_placeholders(task: str, plan: Plan) -> list[str]:
    """Every placeholder of a template, in the order a person reads them: task first."""
    found: dict[str, None] = {}
    for text in _texts(task, plan):
        found.update(dict.fromkeys(placeholders(text)))
    return list(found)


def _substitute(text: str, values: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(1):  # {{name}}: the literal text {name}
            return "{" + match.group(1) + "}"
        return values[match.group(2)]

    # One pass, replacement by function: a value is never scanned again, and its backslashes
    # mean nothing to re.
    return _TOKEN.sub(one, text)


def _map_texts(task: str, plan: Plan, change: Any) -> tuple[str, Plan]:
    steps = [
        s.model_copy(update={"title": change(s.title), "instruction": change(s.instruction)})
        for s in plan.steps
    ]
    return change(task), plan.model_copy(update={"goal": change(plan.goal), "steps": steps})


def escape_placeholders(task: str, plan: Plan) -> tuple[str, Plan]:
    """A run's task and plan as template text that means exactly what they say: any `{name}`
    they hold (code, a JSON example) becomes `{{name}}`, so it is not taken for a parameter."""
    return _map_texts(task, plan, lambda text: _TOKEN.sub(lambda m: "{" + m.group(0) + "}", text))


def parameterize(task: str, plan: Plan, literal: str, name: str) -> tuple[str, Plan]:
    """Turn every occurrence of `literal` in the texts into the placeholder `{name}`."""
    if not re.match(PARAMETER_NAME_PATTERN, name):
        raise ParameterError(
            {name: "a parameter's name is lowercase letters, digits and '_', at most 40"}
        )
    if not literal.strip():
        raise ParameterError({name: "say which text the parameter stands for"})
    if not any(literal in text for text in _texts(task, plan)):
        raise ParameterError(
            {name: f"{literal!r} is not in the task, the goal or any step's title or instruction"}
        )
    return _map_texts(task, plan, lambda text: text.replace(literal, "{" + name + "}"))


# --- checking a template ---------------------------------------------------------------------


def template_check(
    task: str,
    plan_data: Any,
    parameters: Sequence[TemplateParameter | dict[str, Any]],
    *,
    known_tools: Collection[str],
) -> TemplateSpec:
    """Return the template, or raise: PlanValidationError for the plan, ParameterError for its
    parameters. A placeholder no parameter declares gets a required text parameter; a declared
    parameter no text uses is refused (it would ask for a value that goes nowhere)."""
    plan = validate_plan(plan_data, known_tools=known_tools)
    problems: dict[str, str] = {}
    if not task.strip():
        problems[""] = "the task is empty"
    declared: list[TemplateParameter] = []
    for raw in parameters:
        try:
            param = (
                raw if isinstance(raw, TemplateParameter) else TemplateParameter.model_validate(raw)
            )
        except ValueError as exc:
            name = raw.get("name", "?") if isinstance(raw, dict) else "?"
            problems[str(name)] = f"not a valid parameter: {exc}"
            continue
        if any(p.name == param.name for p in declared):
            problems[param.name] = "declared twice"
            continue
        declared.append(param)
    used = template_placeholders(task, plan)
    for param in declared:
        if param.name not in used:
            problems[param.name] = (
                f"no text uses it: put {{{param.name}}} in the task or a step's instruction"
            )
        elif why := _definition_problem(param):
            problems[param.name] = why
    by_name = {p.name: p for p in declared}
    ordered = [by_name.get(name) or TemplateParameter(name=name) for name in used]
    if len(ordered) > MAX_PARAMETERS:
        problems[""] = f"the template has {len(ordered)} parameters; at most {MAX_PARAMETERS}"
    if problems:
        raise ParameterError(problems)
    return TemplateSpec(task=task, plan=plan, parameters=ordered)


def _definition_problem(param: TemplateParameter) -> str | None:
    if param.pattern:
        try:
            re.compile(param.pattern)
        except re.error as exc:
            return f"its pattern is not a regular expression: {exc}"
    if param.type == "choice" and not param.choices:
        return "a choice needs at least one choice"
    if param.minimum is not None and param.maximum is not None and param.minimum > param.maximum:
        return f"its minimum {param.minimum:g} is above its maximum {param.maximum:g}"
    if param.default is not None:
        try:
            check_value(param, param.default)
        except ValueError as exc:
            return f"its default {param.default!r} is refused: {exc}"
    return None


# --- filling ---------------------------------------------------------------------------------


def check_value(param: TemplateParameter, value: str) -> str:
    """The value as it goes into the text, or ValueError saying why it cannot."""
    if len(value) > param.max_length:
        raise ValueError(f"it is {len(value)} characters; at most {param.max_length}")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError("it holds a line break or a control character: give one line")
    if param.type == "text":
        if param.pattern and not re.fullmatch(param.pattern, value):
            raise ValueError(f"it does not match the pattern {param.pattern}")
        return value
    if param.type in ("number", "integer"):
        return _number(param, value)
    if param.type == "email":
        if not _EMAIL.match(value):
            raise ValueError("it is not an email address (name@example.com)")
        return value
    if param.type == "url":
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or " " in value:
            raise ValueError("it is not an http or https URL (https://example.com/...)")
        return value
    if param.type == "date":
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            raise ValueError("it is not a date as YYYY-MM-DD") from None
    if value not in param.choices:  # choice
        raise ValueError(f"choose one of: {', '.join(param.choices)}")
    return value


def _number(param: TemplateParameter, value: str) -> str:
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"it is not a number: {value!r}") from None
    if not number.is_finite():
        raise ValueError("it is not a finite number")
    if param.type == "integer" and number != number.to_integral_value():
        raise ValueError("it must be a whole number")
    if param.minimum is not None and number < Decimal(str(param.minimum)):
        raise ValueError(f"it must be at least {param.minimum:g}")
    if param.maximum is not None and number > Decimal(str(param.maximum)):
        raise ValueError(f"it must be at most {param.maximum:g}")
    return value


def _as_text(raw: Any) -> str | None:
    """A value as a form or a JSON body gives it; None when absent."""
    if raw is None:
        return None
    if isinstance(raw, bool):
        raise ValueError("give text or a number, not true or false")
    if isinstance(raw, int):
        return str(raw)
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise ValueError("it is not a finite number")
        return repr(raw)
    if isinstance(raw, str):
        return raw.strip()
    raise ValueError(f"give text or a number, not {type(raw).__name__}")


def template_fill(
    spec: TemplateSpec, values: Mapping[str, Any], *, known_tools: Collection[str]
) -> FilledTemplate:
    """The task and plan with the values in, checked; ParameterError lists every value refused,
    PlanValidationError what the filled plan breaks (a value too long for a step, ...)."""
    problems: dict[str, str] = {}
    known = {p.name for p in spec.parameters}
    for name in values:
        if name not in known:
            listed = ", ".join(sorted(known)) or "none"
            problems[str(name)] = f"this template has no such parameter; its parameters: {listed}"
    filled: dict[str, str] = {}
    for param in spec.parameters:
        try:
            given = _as_text(values.get(param.name))
            if not given:
                if param.default is None:
                    raise ValueError("a value is required")
                given = param.default
            filled[param.name] = check_value(param, given)
        except ValueError as exc:
            problems[param.name] = str(exc)
    if problems:
        raise ParameterError(problems)
    task, plan = _map_texts(spec.task, spec.plan, lambda text: _substitute(text, filled))
    try:
        checked = validate_plan(plan.model_dump(), known_tools=known_tools)
    except PlanValidationError as exc:
        raise PlanValidationError([_blame(spec, error) for error in exc.errors]) from exc
    return FilledTemplate(task=task, plan=checked, values=filled)


def _blame(spec: TemplateSpec, error: str) -> str:
    """An error of the filled plan, with the parameters the text it names was filled with."""
    names: list[str] = []
    if found := re.match(r"step '([^']+)' ?(title|instruction)?", error):
        step = next((s for s in spec.plan.steps if s.id == found.group(1)), None)
        # Only a text a value went into can be the values' fault (not a tool, not an id).
        if step is not None and found.group(2):
            names = placeholders(getattr(step, found.group(2)))
    elif error.startswith("goal"):
        names = placeholders(spec.plan.goal)
    used = ", ".join(dict.fromkeys(names))
    return f"with these values, {error}" + (f" (filled with {used})" if used else "")


# --- the form's one "check" field ------------------------------------------------------------


def check_text(param: TemplateParameter) -> str:
    """A parameter's check as the form's one field shows it."""
    if param.type == "choice":
        return ", ".join(param.choices)
    if param.type in ("number", "integer"):
        if param.minimum is None and param.maximum is None:
            return ""
        low = "" if param.minimum is None else f"{param.minimum:g}"
        high = "" if param.maximum is None else f"{param.maximum:g}"
        return f"{low}..{high}"
    return param.pattern if param.type == "text" else ""


def check_from_text(kind: str, text: str) -> dict[str, Any]:
    """The form's check field read for a type: choices "a, b, c", a range "1..10" (either end
    may be left out), or a regular expression for text. ValueError says what is wrong."""
    text = text.strip()
    if not text:
        return {}
    if kind == "choice":
        choices = [c.strip() for c in text.split(",") if c.strip()]
        return {"choices": list(dict.fromkeys(choices))}
    if kind in ("number", "integer"):
        low, sep, high = text.partition("..")
        if not sep:
            raise ValueError("write a range as min..max, e.g. 1..10 (either end may be empty)")
        try:
            return {
                "minimum": float(low) if low.strip() else None,
                "maximum": float(high) if high.strip() else None,
            }
        except ValueError:
            raise ValueError(f"{text!r} is not a range of numbers like 1..10") from None
    if kind == "text":
        return {"pattern": text}
    raise ValueError(f"a {kind} parameter has no check to set")


# --- what changed between two versions -------------------------------------------------------


@dataclass(frozen=True)
class TemplateDiff:
    task: tuple[str, str] | None  # (old, new)
    parameters_added: tuple[str, ...]
    parameters_removed: tuple[str, ...]
    # (name, field, old, new) for each field of a parameter both versions have
    parameters_changed: tuple[tuple[str, str, Any, Any], ...]
    plan: PlanDiff

    @property
    def is_empty(self) -> bool:
        return not (
            self.task
            or self.parameters_added
            or self.parameters_removed
            or self.parameters_changed
            or not self.plan.is_empty
        )


def template_diff(old: TemplateSpec, new: TemplateSpec) -> TemplateDiff:
    """From one version of a template to another: its task, its parameters and its plan."""
    before = {p.name: p.model_dump() for p in old.parameters}
    after = {p.name: p.model_dump() for p in new.parameters}
    changed = tuple(
        (name, field, before[name][field], value)
        for name, fields in after.items()
        if name in before
        for field, value in fields.items()
        if before[name][field] != value
    )
    return TemplateDiff(
        task=(old.task, new.task) if old.task != new.task else None,
        parameters_added=tuple(n for n in after if n not in before),
        parameters_removed=tuple(n for n in before if n not in after),
        parameters_changed=changed,
        plan=plan_diff(old.plan, new.plan),
    )
