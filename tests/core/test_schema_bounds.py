"""Every JSON schema sent to a model bounds its strings and arrays: with llama.cpp's grammar a
small model otherwise runs on inside one until max_tokens (seen with a 1.5B model)."""

from __future__ import annotations

import pytest

from planner_ui.agents.executor import REPORT_FAILURE_SPEC
from planner_ui.core.plan import MAX_STEPS, MODEL_MAX_STEPS, ROLES, Plan, plan_json_schema
from planner_ui.core.schema_bounds import bounded, unbounded_places
from planner_ui.tools import REGISTRY


def test_bounded_bounds_every_string_and_array_and_keeps_what_was_there() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "kind": {"type": "string", "enum": ["a", "b"]},
            "short": {"type": "string", "maxLength": 5},
            "tags": {"type": "array", "items": {"type": "string"}},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "nested": {"$ref": "#/$defs/Inner"},
        },
        "$defs": {"Inner": {"type": "object", "properties": {"x": {"type": ["string", "null"]}}}},
    }
    assert len(unbounded_places(schema)) == 5
    result = bounded(schema, max_string=10, max_items=3)
    assert unbounded_places(result) == []
    assert result["properties"]["name"]["maxLength"] == 10
    assert result["properties"]["short"]["maxLength"] == 5
    assert "maxLength" not in result["properties"]["kind"]
    assert result["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string", "maxLength": 10},
        "maxItems": 3,
    }
    assert result["$defs"]["Inner"]["properties"]["x"]["maxLength"] == 10
    assert "maxLength" not in schema["properties"]["name"]  # a copy: the input stays


def test_the_plan_schema_is_bounded_and_names_the_roles() -> None:
    schema = plan_json_schema()
    assert unbounded_places(schema) == []
    assert schema["properties"]["steps"]["maxItems"] == MODEL_MAX_STEPS <= MAX_STEPS
    assert schema["$defs"]["PlanStep"]["properties"]["role"]["enum"] == list(ROLES)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_tool_schema_is_bounded(name: str) -> None:
    assert unbounded_places(REGISTRY[name].spec().input_schema) == []


def test_the_report_failure_schema_is_bounded() -> None:
    assert unbounded_places(REPORT_FAILURE_SPEC.input_schema) == []


def test_a_plan_within_the_bounds_still_validates() -> None:
    plan = Plan.model_validate(
        {"goal": "g", "steps": [{"id": "a", "title": "A", "instruction": "i", "role": "writer"}]}
    )
    assert plan.steps[0].role == "writer"
