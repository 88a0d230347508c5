"""One planner call, and one repair call carrying the validation errors if the plan is bad."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from planner_ui.core.errors import PlanValidationError, ReplyUnusable
from planner_ui.core.grants import new_held_grants, ungranted_mentions
from planner_ui.core.messages import ModelRequest, ToolSpec, Usage
from planner_ui.core.plan import Plan, plan_json_schema
from planner_ui.core.validation import parse_plan_json, validate_plan
from planner_ui.providers.base import Provider

from .executor import stop_reason_failure
from .prompts import PLANNER_SYSTEM, planner_message, revision_message


@dataclass
class PlanAttempt:
    reply_text: str
    usage: Usage
    errors: list[str]


@dataclass
class PlanningResult:
    plan: Plan | None
    attempts: list[PlanAttempt]
    model: str

    @property
    def errors(self) -> list[str]:
        return self.attempts[-1].errors if self.attempts else []


def make_plan(
    provider: Provider,
    task: str,
    tools: Collection[ToolSpec],
    *,
    max_attempts: int = 2,
    first_message: str | None = None,
    examples: Sequence[tuple[str, str, str]] = (),
    replacing: Plan | None = None,
    held: Collection[str] = (),
) -> PlanningResult:
    """Ask for a plan; if it fails validation, ask once more with the errors. Never guesses.

    A valid plan whose steps are not granted the tools their instructions name is also asked
    about once; the answer is taken if it is valid and leaves fewer such doubts, else the first
    plan stands.

    `examples` are past plans for similar tasks, (source, task, plan JSON), given as data.
    `replacing` is the plan a re-plan revises: a revision that grants one of the `held` tools
    (those a person must see) that neither the task nor that plan uses is asked about too."""
    known = {spec.name for spec in tools}
    content = first_message or planner_message(task, tools, examples=examples)
    messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
    attempts: list[PlanAttempt] = []
    model = provider.label
    standing: Plan | None = None  # a valid plan asked about once more
    # How much doubt the standing plan leaves: its grants a person must see, then all its doubts.
    standing_doubts = (0, 0)
    for _ in range(max_attempts):
        reply = provider.complete(
            ModelRequest(
                system=PLANNER_SYSTEM,
                messages=list(messages),
                output_schema=plan_json_schema(sorted(known)),
                purpose="planner",
                max_tokens=8192,
            )
        )
        model = f"{provider.name}:{reply.model}"
        if reply.stop_reason in ("refusal", "model_context_window_exceeded"):
            # Asking again with the same input would only get the same answer.
            raise ReplyUnusable(stop_reason_failure(reply.stop_reason, reply.text, "the planner"))
        try:
            plan = validate_plan(parse_plan_json(reply.text), known_tools=known)
        except PlanValidationError as exc:
            attempts.append(PlanAttempt(reply.text, reply.usage, exc.errors))
            messages += [
                {"role": "assistant", "content": reply.text},
                {
                    "role": "user",
                    "content": "That plan is invalid:\n"
                    + "\n".join(f"- {e}" for e in exc.errors)
                    + "\nReply with the corrected plan as one JSON object.",
                },
            ]
            continue
        attempts.append(PlanAttempt(reply.text, reply.usage, []))
        waits = new_held_grants(plan, replacing, held, task) if replacing is not None else []
        others = ungranted_mentions(plan, known, task)
        doubts = others + waits
        if standing is not None:
            # The second look is taken only where it settled some of what it was asked about:
            # a reply with as many doubts or more is no fix (seen: seed 7 of the opt-in run,
            # asked about a step reading the calculator as a file, kept that step and swapped
            # the calculator in the next step for python, leaving no step the calculator). A
            # grant that would stop the run for a person weighs more than any other doubt
            # (seed 7 again: asked about http_post, its re-plan dropped it and named it in an
            # instruction instead, one doubt for another).
            better = (len(waits), len(doubts)) < standing_doubts
            return PlanningResult(plan if better else standing, attempts, model)
        if not doubts or len(attempts) == max_attempts:
            return PlanningResult(plan, attempts, model)
        standing, standing_doubts = plan, (len(waits), len(doubts))
        messages += [
            {"role": "assistant", "content": reply.text},
            {
                "role": "user",
                "content": "Check that plan's tools:\n"
                + "\n".join(f"- {d}" for d in doubts)
                + "\nGrant each step the tools its instruction says to use (only from the list "
                "given), or reword the instruction. Reply with the whole plan as one JSON object.",
            },
        ]
    if standing is not None:
        return PlanningResult(standing, attempts, model)
    return PlanningResult(None, attempts, model)


def revise_plan(
    provider: Provider, task: str, tools: Collection[ToolSpec], current: Plan, note: str
) -> PlanningResult:
    """A revised plan on a person's request, validated and repaired like a first plan."""
    message = revision_message(task, tools, current.model_dump_json(indent=2), note)
    return make_plan(provider, task, tools, first_message=message)
