"""Plans for the edit tests, and how they apply and refuse edits.

The graphs used throughout, drawn as arrows dependency → dependent:

    DIAMOND  a → b → d,  a → c → d        CHAIN  a → b → c
"""

from typing import Any

import pytest
from hypothesis import strategies as st

from planner_ui.core.edits import (
    Edit,
    EditRefused,
    apply_edit,
)
from planner_ui.core.plan import Plan
from planner_ui.core.validation import validate_plan

TOOLS = {"calculator", "fetch_url", "write_file"}


def step(step_id: str, *depends_on: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": step_id,
        "title": fields.pop("title", step_id.upper()),
        "instruction": fields.pop("instruction", f"Do {step_id}."),
        "role": fields.pop("role", "writer"),
        "tools": fields.pop("tools", []),
        "depends_on": list(depends_on),
        **fields,
    }


def plan_of(*steps: dict[str, Any], goal: str = "A test plan.") -> Plan:
    return validate_plan({"goal": goal, "steps": list(steps)}, known_tools=TOOLS)


DIAMOND = plan_of(step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c"))
CHAIN = plan_of(step("a"), step("b", "a"), step("c", "b"))


def edit(plan: Plan, change: Edit) -> Plan:
    return apply_edit(plan, change, known_tools=TOOLS)


def refusal(plan: Plan, change: Edit, **kwargs: Any) -> list[str]:
    before = plan.model_dump()
    with pytest.raises(EditRefused) as caught:
        apply_edit(plan, change, known_tools=kwargs.pop("known_tools", TOOLS), **kwargs)
    assert plan.model_dump() == before, "a refused edit must leave the plan as it was"
    return caught.value.errors


def ids(plan: Plan) -> list[str]:
    return [s.id for s in plan.steps]


@st.composite
def dag_plans(draw: st.DrawFn) -> Plan:
    """A valid plan: each step depends only on steps made before it, then the order shuffled
    so that nothing can lean on the plan listing dependencies first."""
    count = draw(st.integers(min_value=1, max_value=9))
    names = [f"s{i}" for i in range(count)]
    steps = {
        name: step(
            name,
            *(draw(st.lists(st.sampled_from(names[:i]), unique=True, max_size=3)) if i else []),
            tools=draw(st.lists(st.sampled_from(sorted(TOOLS)), unique=True, max_size=2)),
        )
        for i, name in enumerate(names)
    }
    return plan_of(*(steps[name] for name in draw(st.permutations(names))))
