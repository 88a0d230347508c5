"""The tool registry: lookup by name, and a JSON-schema spec for every tool."""

from __future__ import annotations

import pytest

from planner_ui.tools import REGISTRY, Tool, get_tool, tool_names

ALL_TOOLS = ["calculator", "fetch_url", "list_files", "read_file", "send_email", "write_file"]


def test_tool_names_are_sorted() -> None:
    assert tool_names() == ALL_TOOLS


def test_get_tool_returns_the_registered_instance() -> None:
    assert get_tool("calculator") is REGISTRY["calculator"]


def test_an_unknown_tool_lists_the_known_ones() -> None:
    with pytest.raises(KeyError) as caught:
        get_tool("shell")
    assert caught.value.args[0] == (
        "unknown tool 'shell'; known tools: "
        "calculator, fetch_url, list_files, read_file, send_email, write_file"
    )


def test_only_send_email_is_irreversible() -> None:
    assert [name for name in tool_names() if REGISTRY[name].irreversible] == ["send_email"]


@pytest.mark.parametrize("name", ALL_TOOLS)
def test_each_spec_is_a_json_schema_object(name: str) -> None:
    tool = REGISTRY[name]
    spec = tool.spec()

    assert isinstance(tool, Tool)
    assert spec.name == name == tool.name
    assert spec.description == tool.description and spec.description.endswith(".")
    schema = spec.input_schema
    assert schema["type"] == "object"
    assert isinstance(schema["properties"], dict)
    assert "title" not in schema  # the model does not need pydantic's class name
    assert set(schema.get("required", [])) <= set(schema["properties"])


def test_the_specs_declare_each_tools_inputs() -> None:
    required = {name: REGISTRY[name].spec().input_schema.get("required", []) for name in ALL_TOOLS}
    assert required == {
        "calculator": ["expression"],
        "fetch_url": ["url"],
        "list_files": [],
        "read_file": ["path"],
        "send_email": ["to", "subject", "body"],
        "write_file": ["path", "content"],
    }
    calculator = REGISTRY["calculator"].spec().input_schema["properties"]["expression"]
    assert calculator == {
        "description": "Arithmetic, e.g. '12 * (3 + 4)'.",
        "maxLength": 500,
        "title": "Expression",
        "type": "string",
    }
