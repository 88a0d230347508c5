"""validate_plan and parse_plan_json: every problem reported at once, in exact words."""

from __future__ import annotations

from typing import Any

import pytest

from planner_ui.core.errors import AgentError, PlanValidationError
from planner_ui.core.plan import MAX_STEPS, Plan
from planner_ui.core.validation import parse_plan_json, validate_plan

KNOWN_TOOLS = {"calculator", "fetch_url"}


def step(step_id: str, *depends_on: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": step_id,
        "title": fields.pop("title", f"Step {step_id}"),
        "instruction": fields.pop("instruction", f"Do {step_id}."),
        "role": fields.pop("role", "researcher"),
        "tools": fields.pop("tools", []),
        "depends_on": list(depends_on),
        **fields,
    }


def plan(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"goal": "A test plan.", "steps": list(steps)}


def errors_of(data: Any, **kwargs: Any) -> list[str]:
    with pytest.raises(PlanValidationError) as caught:
        validate_plan(data, known_tools=kwargs.pop("known_tools", KNOWN_TOOLS), **kwargs)
    return caught.value.errors


def test_a_valid_plan_becomes_a_plan_with_steps_in_their_order() -> None:
    data = plan(step("a"), step("b", "a", tools=["calculator"], role="coder"), step("c", "a", "b"))

    result = validate_plan(data, known_tools=KNOWN_TOOLS)

    assert isinstance(result, Plan)
    assert [s.id for s in result.steps] == ["a", "b", "c"]
    assert result.dependencies() == {"a": [], "b": ["a"], "c": ["a", "b"]}
    assert result.step("b").tools == ["calculator"]


def test_duplicate_ids() -> None:
    assert errors_of(plan(step("a"), step("a"))) == ["duplicate step id 'a' (2 steps share it)"]


def test_unknown_dependency_lists_the_known_steps() -> None:
    assert errors_of(plan(step("b"), step("a", "missing"))) == [
        "step 'a' depends on unknown step 'missing'; known steps: a, b"
    ]


def test_a_cycle_is_named_in_the_order_of_its_dependencies() -> None:
    # a needs c, c needs b, b needs a.
    data = plan(step("a", "c"), step("b", "a"), step("c", "b"))

    assert errors_of(data) == ["the plan has a cycle: a → c → b → a"]


def test_self_dependency_is_reported_once_and_not_also_as_a_cycle() -> None:
    assert errors_of(plan(step("a", "a"))) == ["step 'a' depends on itself"]


def test_unknown_role_lists_the_known_roles() -> None:
    assert errors_of(plan(step("a", role="poet"))) == [
        "step 'a' has unknown role 'poet'; known roles: coder, critic, researcher, writer"
    ]


def test_roles_can_be_narrowed() -> None:
    assert errors_of(plan(step("a", role="coder")), roles=("writer",)) == [
        "step 'a' has unknown role 'coder'; known roles: writer"
    ]


def test_unknown_tool_lists_the_known_tools() -> None:
    assert errors_of(plan(step("a", tools=["shell"]))) == [
        "step 'a' grants unknown tool 'shell'; known tools: calculator, fetch_url"
    ]


def test_unknown_tool_when_no_tools_exist() -> None:
    assert errors_of(plan(step("a", tools=["shell"])), known_tools=set()) == [
        "step 'a' grants unknown tool 'shell'; known tools: none"
    ]


def test_a_tool_granted_twice() -> None:
    assert errors_of(plan(step("a", tools=["calculator", "calculator"]))) == [
        "step 'a' grants tool 'calculator' more than once"
    ]


def test_too_many_steps() -> None:
    data = plan(*(step(f"s{n}") for n in range(MAX_STEPS + 1)))

    assert errors_of(data) == [
        f"the plan has {MAX_STEPS + 1} steps; at most {MAX_STEPS} are allowed"
    ]


def test_exactly_max_steps_is_allowed() -> None:
    data = plan(*(step(f"s{n}") for n in range(MAX_STEPS)))

    assert len(validate_plan(data, known_tools=KNOWN_TOOLS).steps) == MAX_STEPS


def test_max_steps_can_be_lowered() -> None:
    assert errors_of(plan(step("a"), step("b"), step("c")), max_steps=2) == [
        "the plan has 3 steps; at most 2 are allowed"
    ]


def test_no_steps() -> None:
    assert errors_of(plan()) == ["the plan has no steps"]


def test_empty_instruction() -> None:
    assert errors_of(plan(step("a", instruction="  \n "))) == ["step 'a' has an empty instruction"]


@pytest.mark.parametrize("bad_id", ["Bad", "has space", "-leading-dash", "x" * 41, "é"])
def test_bad_id(bad_id: str) -> None:
    assert errors_of(plan(step(bad_id))) == [
        f"step '{bad_id}' id: "
        "must be a short lowercase slug (letters, digits, '-' or '_', at most 40)"
    ]


def test_reserved_synthesis_id() -> None:
    assert errors_of(plan(step("synthesis"))) == [
        "step id 'synthesis' is reserved for the synthesizer"
    ]


def test_schema_errors_name_the_step_by_id_or_by_position() -> None:
    untitled = step("a")
    del untitled["title"]
    anonymous = step("b")
    del anonymous["id"]

    assert errors_of(plan(untitled, anonymous, step("c", colour="red"))) == [
        "step 'a' title: Field required",
        "step 2 id: Field required",
        "step 'c' colour: Extra inputs are not permitted",
    ]


def test_a_title_over_120_characters() -> None:
    assert errors_of(plan(step("a", title="t" * 121))) == [
        "step 'a' title: String should have at most 120 characters"
    ]


@pytest.mark.parametrize(
    ("data", "kind"), [([1, 2], "list"), ("a plan", "str"), (None, "NoneType"), (3, "int")]
)
def test_non_object_input(data: Any, kind: str) -> None:
    assert errors_of(data) == [f"a plan must be a JSON object, not {kind}"]


def test_invalid_json() -> None:
    with pytest.raises(PlanValidationError) as caught:
        parse_plan_json("{steps: []}")

    assert caught.value.errors == [
        "the plan is not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)"
    ]


def test_fenced_json_is_accepted() -> None:
    text = (
        '```json\n{"goal": "g", "steps": [{"id": "a", "title": "A", "instruction": "Do.", '
        '"role": "writer"}]}\n```\n'
    )

    data = parse_plan_json(text)

    assert validate_plan(data, known_tools=set()).steps[0].id == "a"


def test_plain_json_with_surrounding_whitespace_is_accepted() -> None:
    assert parse_plan_json('\n  {"steps": []}  \n') == {"steps": []}


def test_every_problem_is_reported_together_in_order() -> None:
    data = plan(
        step("a", "ghost", role="poet", tools=["shell"], instruction=""),
        step("synthesis", "a"),
        step("b", "b"),
    )

    errors = errors_of(data)

    assert errors == [
        "step id 'synthesis' is reserved for the synthesizer",
        "step 'a' has an empty instruction",
        "step 'a' has unknown role 'poet'; known roles: coder, critic, researcher, writer",
        "step 'a' grants unknown tool 'shell'; known tools: calculator, fetch_url",
        "step 'a' depends on unknown step 'ghost'; known steps: a, b, synthesis",
        "step 'b' depends on itself",
    ]


def test_the_exception_message_joins_every_error() -> None:
    with pytest.raises(PlanValidationError) as caught:
        validate_plan(plan(step("a", role="poet"), step("a")), known_tools=KNOWN_TOOLS)

    assert isinstance(caught.value, AgentError)
    assert str(caught.value) == (
        "invalid plan: duplicate step id 'a' (2 steps share it); "
        "step 'a' has unknown role 'poet'; known roles: coder, critic, researcher, writer"
    )


def test_validation_errors_survive_pickling():
    import pickle

    from planner_ui.core.edits import EditRefused

    for cls in (PlanValidationError, EditRefused):
        error = pickle.loads(pickle.dumps(cls(["a is wrong", "b is wrong"])))
        assert type(error) is cls
        assert error.errors == ["a is wrong", "b is wrong"]
        assert str(error) == "invalid plan: a is wrong; b is wrong"
