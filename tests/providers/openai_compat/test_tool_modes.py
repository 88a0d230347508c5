"""The OpenAI-compatible provider's tool modes, through the real SDK against FakeOpenAI:
"prompted" describes the tools in the prompt and holds replies to a schema; "auto" starts
native and switches after a reply that wrote its call as text."""

from __future__ import annotations

import json

import pytest

from planner_ui.core.errors import ProviderError
from planner_ui.providers.base import ToolCall, ToolResult, ToolSpec
from planner_ui.providers.openai_compat import PROMPTED_RULES, OpenAICompatProvider, make_client
from tests.fakes.openai_server import FakeOpenAI
from tests.providers.conftest import CALCULATOR, ask

from .conftest import MODEL


def provider(server: FakeOpenAI, mode: str) -> OpenAICompatProvider:
    client = make_client(api_key="test-key", base_url=server.base_url, max_retries=0)
    return OpenAICompatProvider(MODEL, client, tool_mode=mode)


def test_prompted_asks_for_calls_in_the_prompt_and_reads_them_back(server) -> None:
    call = {"name": "calculator", "arguments": {"expression": "6 * 7"}}
    server.enqueue_json({"tool_calls": [call]})

    reply = provider(server, "prompted").complete(ask(tools=[CALCULATOR]))

    (made,) = reply.tool_calls
    assert (made.name, made.arguments, made.parse_error) == (
        "calculator",
        {"expression": "6 * 7"},
        "",
    )
    assert (reply.text, reply.stop_reason) == ("", "tool_use")
    body = server.requests[0].body
    assert "tools" not in body
    system = body["messages"][0]["content"]
    assert system.startswith("You are terse.\n\n" + PROMPTED_RULES)
    assert "- calculator: Do arithmetic." in system
    schema = body["response_format"]["json_schema"]["schema"]
    calls, answer = schema["anyOf"]
    assert answer["required"] == ["answer"]
    (shape,) = calls["properties"]["tool_calls"]["items"]["anyOf"]
    assert shape["properties"]["name"] == {"const": "calculator"}
    assert shape["properties"]["arguments"] == CALCULATOR.input_schema


def test_prompted_sends_the_history_as_text_and_reads_an_answer(server) -> None:
    server.enqueue_json({"answer": "6 * 7 = **42**"})
    call = ToolCall("c1", "calculator", {"expression": "6 * 7"})
    messages = [
        {"role": "user", "content": "Compute 6 * 7"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "results": [ToolResult("c1", "6 * 7 = 42")]},
    ]

    reply = provider(server, "prompted").complete(ask(tools=[CALCULATOR], messages=messages))

    assert (reply.text, reply.tool_calls, reply.stop_reason) == ("6 * 7 = **42**", [], "end_turn")
    # No tool messages: no tools were declared for them to answer (the fake would refuse).
    assert server.requests[0].body["messages"][1:] == [
        {"role": "user", "content": "Compute 6 * 7"},
        {
            "role": "assistant",
            "content": json.dumps(
                {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6 * 7"}}]}
            ),
        },
        {"role": "user", "content": "Result of calculator:\n6 * 7 = 42"},
    ]


def test_prompted_leaves_a_reply_that_is_no_such_json_as_text(server) -> None:
    server.enqueue_text("42")
    reply = provider(server, "prompted").complete(ask(tools=[CALCULATOR]))
    assert (reply.text, reply.tool_calls) == ("42", [])


def test_prompted_without_tools_is_an_ordinary_request(server) -> None:
    server.enqueue_text("Hi")
    provider(server, "prompted").complete(ask())
    assert "response_format" not in server.requests[0].body


def test_native_answer_only_sends_tool_choice_none(server) -> None:
    server.enqueue_text("42")
    provider(server, "native").complete(ask(tools=[CALCULATOR], tool_choice="none"))
    body = server.requests[0].body
    assert body["tool_choice"] == "none" and body["tools"][0]["function"]["name"] == "calculator"


def test_prompted_answer_only_holds_the_reply_to_an_answer(server) -> None:
    server.enqueue_json({"answer": "6 * 7 = 42"})
    reply = provider(server, "prompted").complete(ask(tools=[CALCULATOR], tool_choice="none"))
    assert reply.text == "6 * 7 = 42"
    schema = server.requests[0].body["response_format"]["json_schema"]["schema"]
    assert schema == {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }


def test_auto_switches_to_prompted_after_a_call_written_as_text(server) -> None:
    model = provider(server, "auto")
    server.enqueue_text('```json\n{"name": "calculator", "arguments": {"expression": "1"}}\n```')
    server.enqueue_json({"answer": "1"})

    first = model.complete(ask(tools=[CALCULATOR]))
    second = model.complete(ask(tools=[CALCULATOR]))

    # The text goes to the executor as it came (it recognises the call there).
    assert first.tool_calls == [] and first.text.startswith("```json")
    assert "tools" in server.requests[0].body
    assert "tools" not in server.requests[1].body
    assert server.requests[1].body["response_format"]["type"] == "json_schema"
    assert (model.prompted, second.text) == (True, "1")


def test_auto_stays_native_while_calls_are_native(server) -> None:
    model = provider(server, "auto")
    server.enqueue_tool_calls([("calculator", {"expression": "1"})])
    server.enqueue_text("1")
    model.complete(ask(tools=[CALCULATOR]))
    model.complete(ask(tools=[CALCULATOR]))
    assert "tools" in server.requests[1].body and model.prompted is False


def test_an_unknown_mode_is_refused(server) -> None:
    with pytest.raises(ProviderError, match="Unknown tool mode 'json'"):
        provider(server, "json")


# --- a reply that must call a tool ----------------------------------------------------------------

OTHER = ToolSpec("report_failure", "Give up.", {"type": "object", "properties": {}})


@pytest.mark.parametrize("mode", ["prompted", "auto"])
def test_a_required_call_is_held_to_a_schema_of_that_tool_alone(server, mode: str) -> None:
    # Even on an auto route still native: llama.cpp's native "required" let a small model
    # write past 1,300 tokens without closing its call; a bounded schema closes it.
    model = provider(server, mode)
    server.enqueue_json({"tool_calls": [{"name": "calculator", "arguments": {"expression": "1"}}]})

    reply = model.complete(ask(tools=[CALCULATOR, OTHER], required_tools=("calculator",)))

    assert [c.name for c in reply.tool_calls] == ["calculator"]
    body = server.requests[0].body
    assert "tools" not in body and "tool_choice" not in body
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["tool_calls"]  # no answer
    (shape,) = schema["properties"]["tool_calls"]["items"]["anyOf"]
    assert shape["properties"]["name"] == {"const": "calculator"}
    # One held reply does not switch an auto route.
    assert reply.tool_mode == ("prompted" if mode == "prompted" else "native")


def test_a_native_route_names_the_required_tool(server) -> None:
    server.enqueue_tool_calls([("calculator", {"expression": "1"})])
    provider(server, "native").complete(
        ask(tools=[CALCULATOR, OTHER], required_tools=("calculator",))
    )
    body = server.requests[0].body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "calculator"}}
    assert [t["function"]["name"] for t in body["tools"]] == ["calculator", "report_failure"]
