"""Evaluations: a suite of tasks with checks on what each run delivers, the arms an experiment
runs it in, and the figures per arm that say whether planning paid.

Pure: the suite's schema (one definition for the file format, the pages, the command and the
API), its YAML/JSON reading and writing, the checks on a deliverable and its files, the Wilson
interval of a success rate, and the aggregation of finished slots into figures per arm with
their ratios to the first arm. services.evaluations stores and runs; selectors read.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import jsonschema
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from . import dag

MAX_SUITE_TASKS = 100
MAX_SUITE_CHARS = 100_000
MAX_REPEAT = 20
# What a check's failure message quotes of the text it looked at.
QUOTED_CHARS = 80
_SLUG = r"^[a-z0-9][a-z0-9_-]{0,59}$"


class EvaluationError(ValueError):
    """A suite file or an arm a person wrote was refused; the message says where and why."""


# --- the suite ----------------------------------------------------------------------------------


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # Where the check looks: the run's deliverable (its result) when empty, else this file of
    # the run's workspace.
    file: str = Field("", max_length=255)


class ContainsCheck(_Check):
    type: Literal["contains"]
    text: str = Field(min_length=1, max_length=2000)
    case_sensitive: bool = False


class RegexCheck(_Check):
    type: Literal["regex"]
    pattern: str = Field(min_length=1, max_length=2000)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return pattern


class NumberCheck(_Check):
    type: Literal["number"]
    value: float
    # Absolute: a number within value ± tolerance anywhere in the text passes.
    tolerance: float = Field(0.0, ge=0)


class FileCheck(_Check):
    """The file exists; with `contains`, it holds that text."""

    type: Literal["file"]
    file: str = Field(min_length=1, max_length=255)
    contains: str = Field("", max_length=2000)


class JsonSchemaCheck(_Check):
    """The text (the whole file, or the first JSON value in the deliverable) is JSON that
    the schema accepts."""

    type: Literal["json_schema"]
    json_schema: dict[str, Any] = Field(alias="schema")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"not a JSON schema: {exc.message}") from None
        return schema


class JudgeCheck(_Check):
    """A judge model reads the deliverable (and the run's small text files) and decides
    whether it meets the rubric; its calls are accounted apart from the run's (see
    services.evaluations). `file` is not used: the judge sees them all."""

    type: Literal["judge"]
    rubric: str = Field(min_length=1, max_length=4000)


Check = Annotated[
    ContainsCheck | RegexCheck | NumberCheck | FileCheck | JsonSchemaCheck | JudgeCheck,
    Field(discriminator="type"),
]


class SuiteTask(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=_SLUG, description="Short name, unique in the suite.")
    task: str = Field(min_length=1, max_length=4000)
    # All must pass; none means the run's own success is the task's.
    checks: list[Check] = Field(default_factory=list, max_length=20)
    note: str = Field("", max_length=1000, description="Why the task is there, what it tests.")


class Suite(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=_SLUG)
    description: str = Field("", max_length=2000)
    # The route of the model that judges its judge checks ("provider:model"); empty: the
    # experiment's, else the settings' judge, else their synthesizer's.
    judge: str = Field("", max_length=200)
    tasks: list[SuiteTask] = Field(min_length=1, max_length=MAX_SUITE_TASKS)

    @field_validator("tasks")
    @classmethod
    def _unique_ids(cls, tasks: list[SuiteTask]) -> list[SuiteTask]:
        seen: set[str] = set()
        for task in tasks:
            if task.id in seen:
                raise ValueError(f"two tasks are named {task.id!r}; give each its own id")
            seen.add(task.id)
        return tasks


def suite_load(text: str) -> Suite:
    """A suite from its YAML or JSON text (JSON is YAML), or EvaluationError saying what is
    wrong and where."""
    if len(text) > MAX_SUITE_CHARS:
        raise EvaluationError(
            f"The suite is {len(text)} characters long; at most {MAX_SUITE_CHARS} are allowed."
        )
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise EvaluationError(f"The suite is not valid YAML or JSON: {exc}") from None
    if not isinstance(data, dict):
        raise EvaluationError("The suite must be a mapping with a name and tasks.")
    try:
        return Suite.model_validate(data)
    except ValidationError as exc:
        raise EvaluationError(_errors(exc)) from None


def _errors(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "suite"
        lines.append(f"{where}: {error['msg']}")
    return "; ".join(lines)


def suite_dump(suite: Suite, fmt: Literal["yaml", "json"] = "yaml") -> str:
    data = suite.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    for task in data["tasks"]:
        # The kind of a check first: it is what a person reads the rest by.
        task["checks"] = [{"type": c["type"], **c} for c in task.get("checks", [])] or None
        if task["checks"] is None:
            del task["checks"]
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


# The suites that ship with agentsite, one YAML file each, named by their file's stem.
SHIPPED_SUITES_DIR = Path(__file__).resolve().parent.parent / "evaluation_suites"


def shipped_suites() -> dict[str, str]:
    """The text of each shipped suite by name (its file's stem)."""
    return {
        path.stem: path.read_text(encoding="utf-8")
        for path in sorted(SHIPPED_SUITES_DIR.glob("*.yaml"))
    }


# --- checks -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    detail: str  # what was checked, and on failure what was found instead


_NUMBER = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")


def numbers_in(text: str) -> list[float]:
    """Every number written in the text ("1,024", "-3.5", "2e3"); thousands separators are
    read as such."""
    found = []
    for match in _NUMBER.finditer(text):
        raw = match.group().replace(",", "").replace("−", "-")
        try:
            found.append(float(raw))
        except ValueError:
            continue
    return found


def judge_checks(task: SuiteTask) -> list[JudgeCheck]:
    return [check for check in task.checks if isinstance(check, JudgeCheck)]


def check_run(
    task: SuiteTask,
    deliverable: str,
    files: Mapping[str, bytes | str],
    judged: Sequence[CheckResult] = (),
) -> list[CheckResult]:
    """Each of the task's checks against what its run delivered and the files it left; the
    judge checks' results are `judged`, in their order (given by whoever asked the judge)."""
    verdicts = iter(judged)
    return [
        next(verdicts, CheckResult(False, "not judged"))
        if isinstance(check, JudgeCheck)
        else _check(check, deliverable, files)
        for check in task.checks
    ]


def checks_pass(results: Iterable[CheckResult]) -> bool:
    return all(result.passed for result in results)


def _text(check: _Check, deliverable: str, files: Mapping[str, bytes | str]) -> str | None:
    if not check.file:
        return deliverable
    content = files.get(check.file)
    if content is None:
        return None
    return content.decode("utf-8", "replace") if isinstance(content, bytes) else content


def _check(check: _Check, deliverable: str, files: Mapping[str, bytes | str]) -> CheckResult:
    where = f"file {check.file}" if check.file else "the deliverable"
    text = _text(check, deliverable, files)
    if text is None:
        present = ", ".join(sorted(files)) or "none"
        return CheckResult(False, f"{where} does not exist (files: {present})")
    if isinstance(check, FileCheck):
        if check.contains and check.contains not in text:
            return CheckResult(False, f"{where} does not contain {check.contains!r}")
        return CheckResult(True, f"{where} exists" + (" with the text" if check.contains else ""))
    if isinstance(check, ContainsCheck):
        haystack, needle = (
            (text, check.text) if check.case_sensitive else (text.lower(), check.text.lower())
        )
        if needle in haystack:
            return CheckResult(True, f"{where} contains {check.text!r}")
        return CheckResult(False, f"{where} does not contain {check.text!r}: {_quote(text)}")
    if isinstance(check, RegexCheck):
        if re.search(check.pattern, text):
            return CheckResult(True, f"{where} matches /{check.pattern}/")
        return CheckResult(False, f"{where} does not match /{check.pattern}/: {_quote(text)}")
    if isinstance(check, NumberCheck):
        wanted = f"{check.value:g}" + (f" ± {check.tolerance:g}" if check.tolerance else "")
        numbers = numbers_in(text)
        if any(abs(n - check.value) <= check.tolerance for n in numbers):
            return CheckResult(True, f"{where} has {wanted}")
        seen = ", ".join(f"{n:g}" for n in numbers[:8]) or "no number"
        return CheckResult(False, f"{where} has no {wanted}; it has {seen}")
    if isinstance(check, JsonSchemaCheck):
        return _check_json(check, where, text)
    raise TypeError(f"unknown check {type(check).__name__}")


def _check_json(check: JsonSchemaCheck, where: str, text: str) -> CheckResult:
    value = _json_in(text) if not check.file else _json_whole(text)
    if value is _NOT_JSON:
        return CheckResult(False, f"{where} holds no JSON: {_quote(text)}")
    validator = jsonschema.validators.validator_for(check.json_schema)(check.json_schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        return CheckResult(False, f"{where}: the schema refuses it: {error.message}")
    return CheckResult(True, f"{where} is JSON the schema accepts")


_NOT_JSON = object()


def _json_whole(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def _json_in(text: str) -> Any:
    """The first JSON object or array in a deliverable that wraps it in prose or a fence."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        return value
    return _json_whole(text.strip())


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= QUOTED_CHARS else flat[: QUOTED_CHARS - 1] + "…")


# --- the judge's answer -------------------------------------------------------------------------

# What a judge must answer, exactly: the schema goes with the request where the model can be
# held to it, and the answer is read by judge_verdict whether or not it was.
JUDGE_VERDICTS = ("pass", "fail")
JUDGE_REASON_CHARS = 2000
JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": list(JUDGE_VERDICTS)},
        "reason": {"type": "string", "minLength": 1, "maxLength": JUDGE_REASON_CHARS},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
JUDGE_ERROR = "judge error"


def judge_verdict(answer: str) -> CheckResult:
    """The judge's answer read strictly: the whole answer is one JSON object with exactly a
    verdict ("pass" or "fail") and a reason. Anything else is an error, never a pass: a judge
    that wrote back a deliverable's own "verdict: pass" among other text has not answered."""
    try:
        value = json.loads(answer)
    except ValueError:
        return CheckResult(
            False, f"{JUDGE_ERROR}: the answer is not one JSON object: {_quote(answer)}"
        )
    validator = jsonschema.validators.validator_for(JUDGE_SCHEMA)(JUDGE_SCHEMA)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        return CheckResult(
            False, f"{JUDGE_ERROR}: the answer is not of the shape asked for ({error.message})"
        )
    reason = " ".join(value["reason"].split())
    return CheckResult(value["verdict"] == "pass", f"judge: {value['verdict']}: {reason}")


# --- arms ---------------------------------------------------------------------------------------


class ArmKind(StrEnum):
    PLAN = "plan"  # planner, executors, synthesizer: an ordinary run
    AGENT = "agent"  # one agent holding every tool: the single-agent baseline


class Arm(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=_SLUG)
    kind: ArmKind
    # Models by part, as a run's options take them; the rest come from the settings.
    routes: dict[str, str] = Field(default_factory=dict)


ARM_PARTS = ("planner", "executor", "synthesizer")


def arm_parse(text: str) -> Arm:
    """An arm from its short form: "plan", "agent", or "NAME=KIND[,PART=PROVIDER:MODEL...]",
    e.g. "cheap=plan,executor=openai:qwen3:8b"."""
    text = text.strip()
    if text in ArmKind.__members__.values():
        return Arm(name=text, kind=ArmKind(text))
    name, sep, rest = text.partition("=")
    kind, *parts = rest.split(",") if sep else ("",)
    if not sep or kind.strip() not in ArmKind.__members__.values():
        raise EvaluationError(
            f"Arm {text!r}: write plan, agent, or NAME=plan|agent[,PART=PROVIDER:MODEL...]."
        )
    routes = {}
    for part in parts:
        key, sep, route = part.partition("=")
        key = key.strip()
        if not sep or not route.strip() or not (key in ARM_PARTS or key.startswith("executor:")):
            raise EvaluationError(
                f"Arm {text!r}: {part!r} should be PART=PROVIDER:MODEL with PART one of "
                f"{', '.join(ARM_PARTS)} or executor:<role>."
            )
        routes[key] = route.strip()
    try:
        return Arm(name=name.strip(), kind=ArmKind(kind.strip()), routes=routes)
    except ValidationError as exc:
        raise EvaluationError(f"Arm {text!r}: {_errors(exc)}") from None


def arms_check(arms: Sequence[Arm]) -> list[Arm]:
    if not arms:
        raise EvaluationError("Choose at least one arm.")
    names = [arm.name for arm in arms]
    if len(set(names)) != len(names):
        raise EvaluationError(f"Two arms share a name in {', '.join(names)}; rename one.")
    return list(arms)


# --- figures ------------------------------------------------------------------------------------

# 95 %: the normal quantile the Wilson interval uses.
Z_95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a success rate: unlike the normal approximation it stays
    inside [0, 1] and is not empty at 0 or n successes, which small suites hit all the time."""
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes out of {n} trials")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class SlotFigures:
    """One finished slot: an arm's run of one task, one repetition, with its run's own figures."""

    arm: str
    task_id: str
    repetition: int
    run_id: int
    succeeded: bool  # the run succeeded and every check passed
    model_calls: int
    tokens_in: int
    tokens_out: int
    tokens_cached: int
    cost_usd: Decimal
    wall_s: float
    # The longest chain of dependent steps, by their measured durations: what the run would
    # have taken with every independent step side by side and no planning.
    critical_path_s: float = 0.0
    # What judging its deliverable cost: apart from the run's own figures above.
    judge_calls: int = 0
    judge_tokens: int = 0
    judge_cost_usd: Decimal = Decimal(0)


def critical_path_s(steps: Mapping[str, tuple[Sequence[str], float]]) -> float:
    """Seconds along the longest dependent chain of a run's steps, given as
    {step id: (its dependencies, its seconds)}."""
    deps = {step: [d for d in needs if d in steps] for step, (needs, _) in steps.items()}
    seconds = {step: spent for step, (_, spent) in steps.items()}
    return sum(seconds[step] for step in dag.critical_path(deps, seconds))


@dataclass
class ArmFigures:
    arm: str
    runs: int = 0
    successes: int = 0
    model_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    cost_usd: Decimal = Decimal(0)
    wall_s: float = 0.0
    critical_path_s: float = 0.0
    interval: tuple[float, float] = (0.0, 1.0)
    # Judging its runs' deliverables: not in the figures above, nor in the ratios.
    judge_calls: int = 0
    judge_tokens: int = 0
    judge_cost_usd: Decimal = Decimal(0)
    # This arm's figure ÷ the first arm's, by figure name; None where the first arm's is 0.
    ratios: dict[str, float | None] = field(default_factory=dict)

    @property
    def success_rate(self) -> float | None:
        return self.successes / self.runs if self.runs else None

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    @property
    def mean_cost_usd(self) -> Decimal | None:
        return self.cost_usd / self.runs if self.runs else None

    @property
    def mean_wall_s(self) -> float | None:
        return self.wall_s / self.runs if self.runs else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "arm": self.arm,
            "runs": self.runs,
            "successes": self.successes,
            "success_rate": self.success_rate,
            "success_interval": list(self.interval),
            "model_calls": self.model_calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "tokens_cached": self.tokens_cached,
            "cost_usd": str(self.cost_usd),
            "wall_s": round(self.wall_s, 3),
            "critical_path_s": round(self.critical_path_s, 3),
            "ratios": self.ratios,
            "judging": {
                "model_calls": self.judge_calls,
                "tokens": self.judge_tokens,
                "cost_usd": str(self.judge_cost_usd),
            },
        }


# The figures a ratio is given for, each per run so that arms with a different number of
# finished runs still compare.
RATIO_FIGURES = (
    "success_rate",
    "model_calls",
    "tokens",
    "cost_usd",
    "wall_s",
    "critical_path_s",
)


def arms_figures(arm_names: Sequence[str], slots: Iterable[SlotFigures]) -> list[ArmFigures]:
    """Totals per arm in the arms' order, with each arm's ratios to the first (the reference,
    e.g. the single agent). A slot counts once whatever the caller passes twice."""
    by_arm = {name: ArmFigures(name) for name in arm_names}
    seen: set[tuple[str, str, int]] = set()
    for slot in slots:
        key = (slot.arm, slot.task_id, slot.repetition)
        if key in seen or slot.arm not in by_arm:
            continue
        seen.add(key)
        figures = by_arm[slot.arm]
        figures.runs += 1
        figures.successes += slot.succeeded
        figures.model_calls += slot.model_calls
        figures.tokens_in += slot.tokens_in
        figures.tokens_out += slot.tokens_out
        figures.tokens_cached += slot.tokens_cached
        figures.cost_usd += slot.cost_usd
        figures.wall_s += slot.wall_s
        figures.critical_path_s += slot.critical_path_s
        figures.judge_calls += slot.judge_calls
        figures.judge_tokens += slot.judge_tokens
        figures.judge_cost_usd += slot.judge_cost_usd
    arms = list(by_arm.values())
    for figures in arms:
        figures.interval = wilson_interval(figures.successes, figures.runs)
    if arms:
        reference = arms[0]
        for figures in arms:
            figures.ratios = {
                name: ratio(_per_run(figures, name), _per_run(reference, name))
                for name in RATIO_FIGURES
            }
    return arms


def _per_run(figures: ArmFigures, name: str) -> float | None:
    if not figures.runs:
        return None
    if name == "success_rate":
        return figures.success_rate
    return float(getattr(figures, name)) / figures.runs


def ratio(a: float | Decimal | None, b: float | Decimal | None) -> float | None:
    if a is None or b is None or not b:
        return None
    return round(float(a) / float(b), 2)
