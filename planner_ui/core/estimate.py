"""What executing a plan should take, before it runs: model calls, tokens, cost, critical path.

A forecast from the plan's shape alone, with the heuristics below; the run page shows the
actual figures beside it once steps run. Planning is not part of it: by the time there is a
plan to estimate the planner has already run, and the page shows what it cost as actuals.

Every call is priced at the base input rate: prompt caching would make the second call of a
step with tools cheaper, so with caching the estimate errs high, which is the safe side for
a person deciding whether to approve.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from . import dag
from .messages import Usage
from .plan import SYNTHESIS_STEP_ID, SYNTHESIZER_ROLE, Plan
from .pricing import Price, call_cost

# --- heuristics --------------------------------------------------------------------------------

# The providers count about one token per four characters of English (the offline provider
# counts exactly that).
CHARS_PER_TOKEN = 4
# Every call repeats the system prompt: a role's prompt and the executor's rules are about
# 830 characters (the synthesizer's about 520), plus the message framing around the instruction.
SYSTEM_PROMPT_TOKENS = 250
# Each granted tool's name, description and argument schema is sent with every call.
TOOL_SPEC_TOKENS = 100
# A step with tools typically makes two calls: one that asks for the tool, one that answers
# with its result in view. A step without tools answers in one.
CALLS_WITHOUT_TOOLS = 1
CALLS_WITH_TOOLS = 2
# The first call's reply is only the tool call: its name and arguments.
TOOL_CALL_TOKENS = 80
# What the tools bring back into the second call: a calculation is a line, a fetched page
# (cut at 20,000 characters, about 5,000 tokens) much more; this is a middle value.
TOOL_RESULT_TOKENS = 1_000
# The length of a step's answer, by role. It counts twice: as the step's output, and as input
# to every step that depends on it (the executor quotes its dependencies' outputs).
OUTPUT_TOKENS_BY_ROLE: dict[str, int] = {
    "researcher": 800,
    "coder": 600,
    "critic": 600,
    "writer": 1_200,
    SYNTHESIZER_ROLE: 1_500,
}
DEFAULT_OUTPUT_TOKENS = 800


@dataclass(frozen=True)
class StepShape:
    """What the estimate needs of a step.

    `instruction_chars` is the length of what the step is told: for the synthesizer that is the
    run's task, since it is given the task rather than an instruction of its own.
    """

    id: str
    role: str
    instruction_chars: int
    tools: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class PricedRoute:
    """The model serving a purpose and its price; None when the price table does not know it."""

    model: str  # "provider:model", or "" when the run names no model for the purpose
    price: Price | None


# Maps a purpose ("executor:<role>", "synthesizer") to the model serving it and its price.
RouteLookup = Callable[[str], PricedRoute]


@dataclass(frozen=True)
class StepEstimate:
    step_id: str
    model: str
    calls: int
    tokens_in: int
    tokens_out: int
    # None when the model has no price: unknown, which is not free.
    cost_usd: Decimal | None


@dataclass(frozen=True)
class PlanEstimate:
    steps: tuple[StepEstimate, ...]
    calls: int
    tokens_in: int
    tokens_out: int
    # The priced steps' total; None when no step is priced. `unpriced_models` says what it
    # leaves out.
    cost_usd: Decimal | None
    unpriced_models: tuple[str, ...]
    # The chain of dependent steps with the most model calls one after another: those calls
    # cannot overlap, so they bound how soon the deliverable can be ready.
    critical_path: tuple[str, ...]
    critical_calls: int

    def step(self, step_id: str) -> StepEstimate:
        for estimate in self.steps:
            if estimate.step_id == step_id:
                return estimate
        raise KeyError(step_id)


def purpose_of(role: str) -> str:
    """The routing purpose that serves a step of this role."""
    return SYNTHESIZER_ROLE if role == SYNTHESIZER_ROLE else f"executor:{role}"


def plan_shapes(plan: Plan, task: str = "") -> list[StepShape]:
    """A plan's steps plus the synthesis step that agentsite appends to join its last steps."""
    shapes = [
        StepShape(s.id, s.role, len(s.instruction), tuple(s.tools), tuple(s.depends_on))
        for s in plan.steps
    ]
    sinks = dag.sinks(plan.dependencies())
    shapes.append(StepShape(SYNTHESIS_STEP_ID, SYNTHESIZER_ROLE, len(task), (), tuple(sinks)))
    return shapes


def output_tokens(role: str) -> int:
    return OUTPUT_TOKENS_BY_ROLE.get(role, DEFAULT_OUTPUT_TOKENS)


def step_calls(step: StepShape) -> int:
    return CALLS_WITH_TOOLS if step.tools else CALLS_WITHOUT_TOOLS


def critical_path(steps: Sequence[StepShape]) -> list[str]:
    """The critical path weighted by model calls per step; ties go to the earlier dependency.

    Model calls rather than tokens, so the path reads the same whatever the prices, and its
    length ("k calls deep") is a count a person can check against the plan.
    """
    known = {s.id for s in steps}
    deps = {s.id: [d for d in s.depends_on if d in known] for s in steps}
    return dag.critical_path(deps, {s.id: float(step_calls(s)) for s in steps})


def estimate_plan(steps: Sequence[StepShape], route: RouteLookup) -> PlanEstimate:
    """Per-step and total estimates for executing `steps`, with the plan's critical path.

    Dependencies on steps not in `steps` are ignored; a cycle raises ValueError (from dag).
    """
    out_by_id = {s.id: output_tokens(s.role) for s in steps}
    routes: dict[str, PricedRoute] = {}
    estimates = []
    for step in steps:
        purpose = purpose_of(step.role)
        if purpose not in routes:
            routes[purpose] = route(purpose)
        estimates.append(_estimate_step(step, out_by_id, routes[purpose]))
    path = critical_path(steps)
    calls = {e.step_id: e.calls for e in estimates}
    priced = [e.cost_usd for e in estimates if e.cost_usd is not None]
    unpriced = {
        routed.model or f"{purpose} (no model)"
        for purpose, routed in routes.items()
        if routed.price is None
    }
    return PlanEstimate(
        steps=tuple(estimates),
        calls=sum(e.calls for e in estimates),
        tokens_in=sum(e.tokens_in for e in estimates),
        tokens_out=sum(e.tokens_out for e in estimates),
        cost_usd=sum(priced, Decimal(0)) if priced else None,
        unpriced_models=tuple(sorted(unpriced)),
        critical_path=tuple(path),
        critical_calls=sum(calls[step_id] for step_id in path),
    )


def _estimate_step(step: StepShape, out_by_id: dict[str, int], routed: PricedRoute) -> StepEstimate:
    context = sum(out_by_id[d] for d in step.depends_on if d in out_by_id)
    prompt = (
        SYSTEM_PROMPT_TOKENS
        + math.ceil(step.instruction_chars / CHARS_PER_TOKEN)
        + context
        + TOOL_SPEC_TOKENS * len(step.tools)
    )
    answer = output_tokens(step.role)
    if step_calls(step) == CALLS_WITH_TOOLS:
        # The answering call sees the first prompt again, the tool call and its result.
        calls = [
            Usage(input_tokens=prompt, output_tokens=TOOL_CALL_TOKENS),
            Usage(
                input_tokens=prompt + TOOL_CALL_TOKENS + TOOL_RESULT_TOKENS, output_tokens=answer
            ),
        ]
    else:
        calls = [Usage(input_tokens=prompt, output_tokens=answer)]
    # Priced call by call, as the accounting prices the actual ones.
    price = routed.price
    cost = sum((call_cost(c, price) for c in calls), Decimal(0)) if price is not None else None
    return StepEstimate(
        step_id=step.id,
        model=routed.model,
        calls=len(calls),
        tokens_in=sum(c.input_tokens for c in calls),
        tokens_out=sum(c.output_tokens for c in calls),
        cost_usd=cost,
    )
