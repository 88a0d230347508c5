"""Plan templates: placeholders found, parameters checked, values filled in as data."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner_ui.core.errors import PlanValidationError
from planner_ui.core.plan import Plan
from planner_ui.core.templates import (
    ParameterError,
    TemplateParameter,
    check_from_text,
    check_text,
    escape_placeholders,
    parameterize,
    placeholders,
    template_check,
    template_diff,
    template_fill,
)

TOOLS = {"web_search", "send_email"}


def plan_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "goal": "A weather report for {city}",
        "steps": [
            {
                "id": "research",
                "title": "Weather in {city}",
                "instruction": "Find this week's weather in {city} for {recipient}.",
                "role": "researcher",
                "tools": ["web_search"],
                "depends_on": [],
            },
            {
                "id": "write",
                "title": "Write it",
                "instruction": "Write a short report. Example JSON: {{day}}",
                "role": "writer",
                "tools": [],
                "depends_on": ["research"],
            },
        ],
    }
    data.update(overrides)
    return data


def spec(parameters: list[dict[str, Any]] | None = None, task: str = "Report on {city}"):
    return template_check(task, plan_data(), parameters or [], known_tools=TOOLS)


def test_placeholders_in_order_and_escaped_ones_are_not_placeholders() -> None:
    assert placeholders("{b} then {a} then {b} and {{c}} and {Not} and { d }") == ["b", "a"]


def test_check_declares_every_placeholder_task_first() -> None:
    found = spec([{"name": "recipient", "type": "email", "default": "me@example.com"}])
    assert [p.name for p in found.parameters] == ["city", "recipient"]
    assert found.parameter("city").type == "text" and found.parameter("city").required
    assert found.parameter("recipient").default == "me@example.com"


def test_check_refuses_unused_and_duplicate_parameters_and_bad_defaults() -> None:
    with pytest.raises(ParameterError) as exc:
        spec(
            [
                {"name": "country"},
                {"name": "city", "type": "number", "default": "Paris"},
                {"name": "recipient", "type": "choice"},
            ]
        )
    assert exc.value.problems == {
        "country": "no text uses it: put {country} in the task or a step's instruction",
        "city": "its default 'Paris' is refused: it is not a number: 'Paris'",
        "recipient": "a choice needs at least one choice",
    }


def test_check_validates_the_plan_with_the_plan_rules() -> None:
    bad = plan_data()
    bad["steps"][1]["depends_on"] = ["nowhere"]
    with pytest.raises(PlanValidationError) as exc:
        template_check("t {city}", bad, [], known_tools=TOOLS)
    assert exc.value.errors == [
        "step 'write' depends on unknown step 'nowhere'; known steps: research, write"
    ]


def test_fill_substitutes_everywhere_and_keeps_escaped_braces() -> None:
    filled = template_fill(spec(), {"city": "Lyon", "recipient": "a@b.org"}, known_tools=TOOLS)
    assert filled.task == "Report on Lyon"
    assert filled.plan.goal == "A weather report for Lyon"
    assert filled.plan.steps[0].title == "Weather in Lyon"
    assert filled.plan.steps[0].instruction == "Find this week's weather in Lyon for a@b.org."
    assert filled.plan.steps[1].instruction == "Write a short report. Example JSON: {day}"
    assert filled.values == {"city": "Lyon", "recipient": "a@b.org"}


def test_a_value_cannot_inject_a_placeholder_or_a_regex_escape() -> None:
    filled = template_fill(
        spec(), {"city": "{recipient} \\1 \\g<0>", "recipient": "x"}, known_tools=TOOLS
    )
    assert filled.task == "Report on {recipient} \\1 \\g<0>"
    assert filled.plan.steps[0].instruction.endswith("in {recipient} \\1 \\g<0> for x.")


def test_fill_names_every_refused_value() -> None:
    params = [
        {"name": "city", "pattern": "[A-Z][a-z]+"},
        {"name": "recipient", "type": "email"},
    ]
    with pytest.raises(ParameterError) as exc:
        template_fill(spec(params), {"city": "paris", "mood": "x"}, known_tools=TOOLS)
    assert exc.value.problems == {
        "mood": "this template has no such parameter; its parameters: city, recipient",
        "city": "it does not match the pattern [A-Z][a-z]+",
        "recipient": "a value is required",
    }
    assert str(exc.value).startswith("mood: this template has no such parameter")


@pytest.mark.parametrize(
    ("param", "value", "why"),
    [
        ({"type": "number", "minimum": 1, "maximum": 10}, "11", "it must be at most 10"),
        ({"type": "number"}, "ten", "it is not a number: 'ten'"),
        ({"type": "number"}, "NaN", "it is not a finite number"),
        ({"type": "integer"}, "2.5", "it must be a whole number"),
        ({"type": "email"}, "not-an-email", "it is not an email address (name@example.com)"),
        (
            {"type": "url"},
            "ftp://x.org",
            "it is not an http or https URL (https://example.com/...)",
        ),
        ({"type": "date"}, "31/12/2026", "it is not a date as YYYY-MM-DD"),
        ({"type": "choice", "choices": ["a", "b"]}, "c", "choose one of: a, b"),
        ({"max_length": 3}, "abcd", "it is 4 characters; at most 3"),
        ({}, "two\nlines", "it holds a line break or a control character: give one line"),
    ],
)
def test_each_type_checks_its_values(param: dict[str, Any], value: str, why: str) -> None:
    with pytest.raises(ParameterError) as exc:
        template_fill(
            spec([{"name": "city", **param}]), {"city": value, "recipient": "r"}, known_tools=TOOLS
        )
    assert exc.value.problems == {"city": why}


def test_defaults_fill_empty_values_and_numbers_come_from_json() -> None:
    params = [
        {"name": "city", "type": "integer", "default": "7"},
        {"name": "recipient", "default": "the team"},
    ]
    assert template_fill(spec(params), {"city": ""}, known_tools=TOOLS).values == {
        "city": "7",
        "recipient": "the team",
    }
    assert template_fill(spec(params), {"city": 12}, known_tools=TOOLS).values["city"] == "12"
    with pytest.raises(ParameterError) as exc:
        template_fill(spec(params), {"city": True}, known_tools=TOOLS)
    assert exc.value.problems == {"city": "give text or a number, not true or false"}


def test_a_value_that_breaks_the_plan_is_refused_naming_the_parameter() -> None:
    params = [{"name": "city", "max_length": 2000}]
    with pytest.raises(PlanValidationError) as exc:
        template_fill(spec(params), {"city": "x" * 200, "recipient": "r"}, known_tools=TOOLS)
    assert exc.value.errors == [
        "with these values, step 'research' title: String should have at most 120 characters "
        "(filled with city)"
    ]


def test_fill_refuses_a_tool_the_runner_does_not_have() -> None:
    with pytest.raises(PlanValidationError) as exc:
        template_fill(spec(), {"city": "a", "recipient": "b"}, known_tools={"send_email"})
    assert exc.value.errors == [
        "with these values, step 'research' grants unknown tool 'web_search'; known tools: "
        "send_email"
    ]


def test_parameterize_and_escape_a_runs_plan() -> None:
    plan = Plan.model_validate(plan_data(goal="Weather for Paris {x}"))
    task, plan = escape_placeholders("Weather in Paris", plan)
    assert plan.goal == "Weather for Paris {{x}}"
    assert plan.steps[0].instruction == "Find this week's weather in {{city}} for {{recipient}}."
    task, plan = parameterize(task, plan, "Paris", "city")
    assert task == "Weather in {city}"
    assert plan.goal == "Weather for {city} {{x}}"
    found = template_check(task, plan.model_dump(), [], known_tools=TOOLS)
    assert [p.name for p in found.parameters] == ["city"]
    with pytest.raises(ParameterError) as exc:
        parameterize(task, plan, "Berlin", "city")
    assert exc.value.problems == {
        "city": "'Berlin' is not in the task, the goal or any step's title or instruction"
    }
    with pytest.raises(ParameterError) as exc:
        parameterize(task, plan, "Weather", "City")
    assert exc.value.problems == {
        "City": "a parameter's name is lowercase letters, digits and '_', at most 40"
    }


def test_the_forms_check_field_round_trips() -> None:
    assert check_from_text("choice", " a, b ,a,") == {"choices": ["a", "b"]}
    assert check_from_text("number", "1..") == {"minimum": 1.0, "maximum": None}
    assert check_from_text("text", "[a-z]+") == {"pattern": "[a-z]+"}
    assert check_from_text("email", "") == {}
    with pytest.raises(ValueError, match="write a range as min..max"):
        check_from_text("integer", "5")
    param = TemplateParameter(name="n", type="number", minimum=1, maximum=2.5)
    assert check_text(param) == "1..2.5"
    assert check_text(TemplateParameter(name="c", type="choice", choices=["x", "y"])) == "x, y"


@given(st.text(max_size=60).filter(lambda v: all(ord(c) >= 32 and ord(c) != 127 for c in v)))
def test_any_one_line_value_lands_verbatim(value: str) -> None:
    found = spec([{"name": "recipient", "default": "r"}])
    stripped = value.strip()
    if not stripped:
        return
    filled = template_fill(found, {"city": value}, known_tools=TOOLS)
    assert filled.task == "Report on " + stripped
    assert filled.plan.steps[0].title == "Weather in " + stripped


def test_the_diff_of_two_versions_names_task_parameters_and_steps() -> None:
    old = spec([{"name": "recipient", "default": "me"}])
    data = plan_data()
    data["steps"][1]["title"] = "Write it up"
    new = template_check(
        "Report on {city} for {days}",
        data,
        [
            {"name": "recipient", "default": "team"},
            {"name": "city", "type": "choice", "choices": ["A"]},
        ],
        known_tools=TOOLS,
    )
    diff = template_diff(old, new)
    assert diff.task == ("Report on {city}", "Report on {city} for {days}")
    assert diff.parameters_added == ("days",) and diff.parameters_removed == ()
    assert diff.parameters_changed == (
        ("city", "type", "text", "choice"),
        ("city", "choices", [], ["A"]),
        ("recipient", "default", "me", "team"),
    )
    assert [step for step, _ in diff.plan.changed] == ["write"]
    assert template_diff(old, old).is_empty
