"""recognise_calls: tool calls written as text, in every shape small models write them."""

from __future__ import annotations

import pytest

from planner_ui.core.text_calls import (
    Recognised,
    TextCall,
    description_examples,
    echoed_example,
    is_call_shaped,
    recognise_calls,
)

KNOWN = {"calculator", "read_file", "write_file", "list_files", "shell", "report_failure"}
SIX_BY_SEVEN = TextCall("calculator", {"expression": "6 * 7"})


def calls(text: str) -> list[TextCall]:
    return recognise_calls(text, KNOWN).calls


@pytest.mark.parametrize(
    "text",
    [
        # name/arguments, bare and fenced (with and without a language), as Qwen writes them.
        '{"name": "calculator", "arguments": {"expression": "6 * 7"}}',
        '```json\n{"name": "calculator", "arguments": {"expression": "6 * 7"}}\n```',
        '```\n{\n  "name": "calculator",\n  "arguments": {"expression": "6 * 7"}\n}\n```',
        # tool/args, function/parameters, name/parameters (Llama 3.1), tool_name/tool_input.
        '{"tool": "calculator", "args": {"expression": "6 * 7"}}',
        '{"function": "calculator", "parameters": {"expression": "6 * 7"}}',
        '{"name": "calculator", "parameters": {"expression": "6 * 7"}}',
        '{"tool_name": "calculator", "tool_input": {"expression": "6 * 7"}}',
        # OpenAI's nested shape, arguments as a JSON string or as an object.
        '{"type": "function", "function": {"name": "calculator", '
        '"arguments": "{\\"expression\\": \\"6 * 7\\"}"}}',
        '{"id": "call_1", "type": "function", "function": {"name": "calculator", '
        '"arguments": {"expression": "6 * 7"}}}',
        '{"tool_calls": [{"type": "function", "function": {"name": "calculator", '
        '"arguments": "{\\"expression\\": \\"6 * 7\\"}"}}]}',
        # Qwen/Hermes tags, closed or left open at the end of the reply.
        '<tool_call>\n{"name": "calculator", "arguments": {"expression": "6 * 7"}}\n</tool_call>',
        '<tool_call>{"name": "calculator", "arguments": {"expression": "6 * 7"}}',
        # Doubled braces, as Qwen2.5-Coder wrote one in the recorded runs.
        '{{"name": "calculator", "arguments": {"expression": "6 * 7"}}}',
    ],
)
def test_each_shape_is_one_call(text: str) -> None:
    assert calls(text) == [SIX_BY_SEVEN]


def test_prose_around_a_call_is_kept_apart() -> None:
    text = (
        "I will compute it.\n\n```json\n"
        '{"name": "calculator", "arguments": {"expression": "6 * 7"}}\n```\n\nThen report.'
    )
    found = recognise_calls(text, KNOWN)
    assert found == Recognised([SIX_BY_SEVEN], [], "I will compute it.\n\nThen report.")


def test_a_call_followed_by_a_sentence() -> None:
    text = '{"name": "calculator", "arguments": {"expression": "6 * 7"}} This gives the product.'
    found = recognise_calls(text, KNOWN)
    assert found.calls == [SIX_BY_SEVEN]
    assert found.prose == "This gives the product."


def test_several_calls_in_one_reply_in_order() -> None:
    text = (
        '```json\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n```\n'
        '<tool_call>{"name": "write_file", "arguments": {"path": "b.txt", "content": "x"}}'
        "</tool_call>\n"
        '[{"tool": "list_files", "args": {}}, {"name": "calculator", "arguments": '
        '{"expression": "6 * 7"}}]'
    )
    assert calls(text) == [
        TextCall("read_file", {"path": "a.txt"}),
        TextCall("write_file", {"path": "b.txt", "content": "x"}),
        TextCall("list_files", {}),
        SIX_BY_SEVEN,
    ]


def test_a_call_to_a_known_tool_the_step_may_not_have_is_still_a_call() -> None:
    # Whether it is granted is the executor's to decide (and refuse): here it is a call.
    assert calls('{"name": "shell", "arguments": {"command": "ls"}}') == [
        TextCall("shell", {"command": "ls"})
    ]


def test_an_unknown_tool_is_no_call_but_is_reported() -> None:
    text = '```json\n{"name": "diff", "arguments": {"path1": "a", "path2": "b"}}\n```'
    found = recognise_calls(text, KNOWN)
    assert (found.calls, found.foreign, found.prose) == ([], ["diff"], "")
    assert is_call_shaped(text, KNOWN)


def test_a_malformed_call_yields_a_parse_error() -> None:
    text = (
        '```json\n{"name": "write_file", "arguments": {"path": "a.md", "content": `# Title`}}\n```'
    )
    (call,) = calls(text)
    assert (call.name, call.arguments) == ("write_file", {})
    assert call.parse_error.startswith(
        "the call written in the reply's text was not valid JSON (Expecting value at character "
    )
    assert '{"name": "<tool>", "arguments": {…}}' in call.parse_error


def test_arguments_that_are_no_object_yield_a_parse_error() -> None:
    (as_list,) = calls('{"name": "calculator", "arguments": ["6 * 7"]}')
    assert as_list.parse_error == "the arguments must be a JSON object, not a list"
    (bad_string,) = calls('{"name": "calculator", "arguments": "{expression: 6*7}"}')
    assert bad_string.parse_error.startswith("the arguments were not valid JSON: Expecting")


def test_a_tool_without_arguments() -> None:
    assert calls('{"name": "list_files"}') == [TextCall("list_files", {})]
    assert calls('{"name": "list_files", "arguments": null}') == [TextCall("list_files", {})]


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 42.",
        '```json\n{"result": 375}\n```',
        # A tool's listing, not a call to it.
        '{"name": "shell", "description": "Run a command"}',
        # Data that happens to have a name.
        '{"name": "Alice", "age": 3}',
        "A set literal {1, 2} and a brace { alone.",
        # A tool's definition, as a step asked to write one would: no call either.
        '{"type": "function", "function": {"name": "get_weather", "description": "Weather",'
        ' "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}',
        '{"name": "calculator", "description": "Do sums", "input_schema": {"type": "object"}}',
    ],
)
def test_no_call_in_text_without_one(text: str) -> None:
    found = recognise_calls(text, KNOWN)
    assert (found.calls, found.foreign) == ([], [])
    assert not is_call_shaped(text, KNOWN)


def test_a_call_inside_another_objects_data_is_not_a_call() -> None:
    text = '{"result": {"name": "calculator", "arguments": {"expression": "6 * 7"}}}'
    assert calls(text) == []


def test_a_call_among_prose_is_not_call_shaped_as_a_whole() -> None:
    text = 'Use it like this: {"name": "calculator", "arguments": {"expression": "1+1"}}.'
    assert not is_call_shaped(text, KNOWN)
    assert is_call_shaped('```json\n{"name": "calculator", "arguments": {}}\n```', KNOWN)


CALCULATOR_SCHEMA = {
    "properties": {"expression": {"description": "Arithmetic, e.g. '12 * (3 + 4)'."}},
}


def test_a_descriptions_examples_are_found() -> None:
    assert description_examples("Evaluate arithmetic.", CALCULATOR_SCHEMA) == ["12 * (3 + 4)"]
    schema = {"properties": {"city": {"type": "string", "examples": ["Lisbon"]}}}
    assert description_examples('Weather, for example "Porto today".', schema) == [
        "Porto today",
        "Lisbon",
    ]


@pytest.mark.parametrize(
    ("text", "given", "echo"),
    [
        ("12 * (3 + 4) = 84", "Compute 1500 * 0.2 + 75", "12 * (3 + 4)"),
        # The step was asked about it, verbatim or through all of its numbers.
        ("12 * (3 + 4) = 84", "Compute 12 * (3 + 4)", ""),
        ("12 * (3 + 4) = 84", "Multiply 12 by the sum of 3 and 4", ""),
        ("1500 * 0.2 + 75 = 375", "Compute 1500 * 0.2 + 75", ""),
    ],
)
def test_an_echoed_example(text: str, given: str, echo: str) -> None:
    assert echoed_example(text, ["12 * (3 + 4)"], given) == echo


def test_an_example_without_numbers_is_never_an_echo() -> None:
    assert echoed_example('{"command": "ls -la"}', ["ls -la"], "List the files in detail") == ""
