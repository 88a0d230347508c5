"""The estimate of a plan's execution: worked examples checked by hand, then properties."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner_ui.core.estimate import (
    PricedRoute,
    StepShape,
    critical_path,
    estimate_plan,
    plan_shapes,
)
from planner_ui.core.plan import ROLES, Plan, PlanStep
from planner_ui.core.pricing import Price

# $3 per million tokens in, $15 out.
PRICE = Price(Decimal(3), Decimal(15), Decimal("0.3"), Decimal("3.75"))


def priced(purpose: str) -> PricedRoute:
    return PricedRoute("anthropic:claude-sonnet-5-5", PRICE)


def step(id: str, role: str = "researcher", chars: int = 0, tools=(), deps=()) -> PlanStep:
    return PlanStep(
        id=id,
        title=id,
        instruction="x" * chars,
        role=role,
        tools=list(tools),
        depends_on=list(deps),
    )


# a (researcher, no tools) → b (coder, calculator) → synthesis
CHAIN = Plan(
    steps=[
        step("a", "researcher", chars=400),
        step("b", "coder", chars=200, tools=["calculator"], deps=["a"]),
    ]
)


def test_a_chain_worked_out_by_hand() -> None:
    estimate = estimate_plan(plan_shapes(CHAIN, task="t" * 100), priced)

    a, b, synthesis = estimate.steps
    # a: 250 system + 400/4 instruction = 350 in, a researcher's 800 out, one call.
    assert (a.step_id, a.calls, a.tokens_in, a.tokens_out) == ("a", 1, 350, 800)
    assert a.cost_usd == Decimal("0.013050")  # (350 × 3 + 800 × 15) / 1e6
    # b: prompt = 250 + 200/4 + a's 800 quoted + 100 for one tool spec = 1,200.
    # Call 1: 1,200 in, 80 out (the tool call). Call 2: 1,200 + 80 + 1,000 (result) in, 600 out.
    assert (b.calls, b.tokens_in, b.tokens_out) == (2, 3_480, 680)
    assert b.cost_usd == Decimal("0.020640")  # (3,480 × 3 + 680 × 15) / 1e6
    # synthesis: 250 + the task's 100/4 + b's 600 quoted = 875 in, 1,500 out.
    assert (synthesis.step_id, synthesis.calls) == ("synthesis", 1)
    assert (synthesis.tokens_in, synthesis.tokens_out) == (875, 1_500)
    assert synthesis.cost_usd == Decimal("0.025125")
    assert (estimate.calls, estimate.tokens_in, estimate.tokens_out) == (4, 4_705, 2_980)
    assert estimate.cost_usd == Decimal("0.058815")
    assert estimate.unpriced_models == ()
    assert estimate.critical_path == ("a", "b", "synthesis")
    assert estimate.critical_calls == 4


def test_the_synthesis_step_joins_the_plans_last_steps() -> None:
    plan = Plan(steps=[step("a"), step("b"), step("c", deps=["a"])])

    shapes = plan_shapes(plan, task="Compare tea and coffee")

    assert shapes[-1] == StepShape("synthesis", "synthesizer", 22, (), ("b", "c"))


def test_the_critical_path_follows_the_branch_with_more_calls() -> None:
    # Both branches are one step deep, but 'tooled' makes two calls.
    plan = Plan(
        steps=[
            step("plain"),
            step("tooled", tools=["fetch_url"]),
            step("join", "critic", deps=["plain", "tooled"]),
        ]
    )

    estimate = estimate_plan(plan_shapes(plan), priced)

    assert estimate.critical_path == ("tooled", "join", "synthesis")
    assert estimate.critical_calls == 4


def test_unpriced_models_are_named_and_left_out_of_the_cost() -> None:
    def lookup(purpose: str) -> PricedRoute:
        if purpose == "executor:coder":
            return PricedRoute("openai:qwen3-coder:30b", None)
        if purpose == "executor:critic":
            return PricedRoute("", None)
        return priced(purpose)

    plan = Plan(steps=[step("a", chars=400), step("b", "coder"), step("c", "critic")])
    estimate = estimate_plan(plan_shapes(plan), lookup)

    assert estimate.step("b").cost_usd is None
    assert estimate.step("c").model == ""
    assert estimate.unpriced_models == ("executor:critic (no model)", "openai:qwen3-coder:30b")
    assert estimate.cost_usd == estimate.step("a").cost_usd + estimate.step("synthesis").cost_usd


def test_with_no_price_at_all_the_cost_is_unknown_not_zero() -> None:
    estimate = estimate_plan(plan_shapes(CHAIN), lambda purpose: PricedRoute("x:y", None))

    assert estimate.cost_usd is None
    assert estimate.unpriced_models == ("x:y",)


def test_each_purpose_is_looked_up_once() -> None:
    asked: list[str] = []

    def lookup(purpose: str) -> PricedRoute:
        asked.append(purpose)
        return priced(purpose)

    estimate_plan(plan_shapes(Plan(steps=[step("a"), step("b"), step("c", "coder")])), lookup)

    assert asked == ["executor:researcher", "executor:coder", "synthesizer"]


def test_unknown_dependencies_are_ignored_and_a_cycle_is_refused() -> None:
    lone = [StepShape("a", "writer", 0, (), ("ghost",))]
    assert estimate_plan(lone, priced).step("a").tokens_in == 250
    assert critical_path(lone) == ["a"]

    cyclic = [StepShape("a", "writer", 0, (), ("b",)), StepShape("b", "writer", 0, (), ("a",))]
    with pytest.raises(ValueError, match="cycle"):
        estimate_plan(cyclic, priced)


# --- properties ----------------------------------------------------------------------------------


@st.composite
def plans(draw: st.DrawFn, max_steps: int = 10) -> Plan:
    count = draw(st.integers(min_value=1, max_value=max_steps))
    ids = [f"s{i}" for i in range(count)]
    steps = [
        step(
            id,
            draw(st.sampled_from(ROLES)),
            chars=draw(st.integers(min_value=0, max_value=4000)),
            tools=draw(st.lists(st.sampled_from(["calculator", "fetch_url"]), unique=True)),
            deps=draw(st.lists(st.sampled_from(ids[:i]), unique=True)) if i else [],
        )
        for i, id in enumerate(ids)
    ]
    return Plan(steps=steps)


@given(plans(), st.data())
def test_adding_a_step_never_lowers_the_estimate(plan: Plan, data: st.DataObject) -> None:
    ids = [s.id for s in plan.steps]
    added = step(
        "added",
        data.draw(st.sampled_from(ROLES)),
        chars=data.draw(st.integers(min_value=0, max_value=4000)),
        tools=data.draw(st.lists(st.sampled_from(["calculator", "shell"]), unique=True)),
        deps=data.draw(st.lists(st.sampled_from(ids), unique=True)),
    )
    bigger = Plan(steps=[*plan.steps, added])

    before = estimate_plan(plan_shapes(plan, "task"), priced)
    after = estimate_plan(plan_shapes(bigger, "task"), priced)

    assert after.calls > before.calls
    assert after.tokens_in >= before.tokens_in
    assert after.tokens_out > before.tokens_out
    assert after.cost_usd > before.cost_usd
    assert after.critical_calls >= before.critical_calls


@given(plans())
def test_the_critical_path_is_a_path_from_a_first_step_to_the_synthesis(plan: Plan) -> None:
    shapes = plan_shapes(plan)
    deps = {s.id: s.depends_on for s in shapes}

    estimate = estimate_plan(shapes, priced)

    path = estimate.critical_path
    assert path[-1] == "synthesis"
    assert deps[path[0]] == ()
    for earlier, later in zip(path, path[1:], strict=False):
        assert earlier in deps[later], f"{earlier} → {later} is not an edge"
    # No chain of dependent steps makes more calls one after another.
    calls = {e.step_id: e.calls for e in estimate.steps}
    deepest: dict[str, int] = {}
    for s in shapes:  # plan order is a topological order here
        deepest[s.id] = calls[s.id] + max((deepest[d] for d in s.depends_on), default=0)
    assert estimate.critical_calls == max(deepest.values()) == deepest["synthesis"]


@given(plans())
def test_totals_are_the_sums_of_the_steps(plan: Plan) -> None:
    estimate = estimate_plan(plan_shapes(plan), priced)

    assert estimate.calls == sum(e.calls for e in estimate.steps)
    assert estimate.tokens_in == sum(e.tokens_in for e in estimate.steps)
    assert estimate.tokens_out == sum(e.tokens_out for e in estimate.steps)
    assert estimate.cost_usd == sum(e.cost_usd for e in estimate.steps)
    assert len(estimate.steps) == len(plan.steps) + 1
