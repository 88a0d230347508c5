"""The Anthropic provider through the real SDK, against a local server speaking its protocol:
requests and replies, tools, structured output, cache figures.

Nothing here patches our code or the SDK: the SDK makes real HTTP requests to FakeAnthropic.
The provider always streams, so every test here goes through the SDK's streaming path.
"""

from __future__ import annotations

import json

import pytest

from planner_ui.core.plan import Plan, plan_json_schema
from planner_ui.providers.base import (
    ProviderError,
    ToolCall,
    ToolResult,
    Usage,
)
from tests.providers.conftest import CALCULATOR, Pieces, ask

from .conftest import LONG_TEXT, MODEL, provider

# --- requests and replies ----------------------------------------------------------------------


def test_a_text_reply_maps_text_stop_reason_model_and_usage(server):
    server.enqueue_text("Hi there", input_tokens=12, output_tokens=3)
    reply = provider(server).complete(ask(max_tokens=321))
    assert reply.text == "Hi there"
    assert reply.tool_calls == []
    assert reply.stop_reason == "end_turn"
    assert reply.model == MODEL
    assert reply.usage == Usage(input_tokens=12, output_tokens=3)
    body = server.requests[0].body
    assert body["stream"] is True
    assert body["model"] == MODEL
    assert body["max_tokens"] == 321
    assert body["messages"] == [{"role": "user", "content": "Say hi"}]
    assert "tools" not in body and "output_config" not in body


def test_the_key_and_api_version_arrive_as_headers(server):
    server.enqueue_text("ok")
    provider(server).complete(ask())
    sent = server.requests[0]
    # 2.x sends Authorization: Bearer; the fake accepts x-api-key too.
    assert sent.api_key == "test-key"
    assert sent.headers["authorization"] == "Bearer test-key"
    assert sent.headers["anthropic-version"]


def test_on_text_receives_the_reply_in_pieces(server):
    server.enqueue_text(LONG_TEXT)
    pieces = Pieces()
    reply = provider(server).complete(ask(), on_text=pieces)
    assert len(pieces) > 1
    assert "".join(pieces) == reply.text == LONG_TEXT


def test_cached_input_tokens_count_as_input_and_are_reported_apart(server):
    # The fake sends the cache figures in message_start only, and the cumulative
    # output_tokens in message_delta, as the API does: the SDK must keep both.
    server.enqueue_text(
        "ok",
        input_tokens=5,
        output_tokens=7,
        cache_read_input_tokens=100,
        cache_creation_input_tokens=20,
    )
    reply = provider(server).complete(ask())
    assert reply.usage == Usage(
        input_tokens=125, output_tokens=7, cache_read_tokens=100, cache_write_tokens=20
    )


def test_a_reply_without_cache_figures_reports_no_cache_tokens(server):
    server.enqueue_text("ok", input_tokens=9, output_tokens=2)
    assert provider(server).complete(ask()).usage == Usage(input_tokens=9, output_tokens=2)


def test_the_system_prompt_and_the_tools_carry_cache_control(server):
    server.enqueue_text("ok")
    provider(server).complete(ask(tools=[CALCULATOR]))
    body = server.requests[0].body
    assert body["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["tools"] == [
        {
            "name": "calculator",
            "description": "Do arithmetic.",
            "input_schema": {"type": "object", "properties": {"expression": {"type": "string"}}},
            "cache_control": {"type": "ephemeral"},
        }
    ]


def test_an_answer_only_request_sends_tool_choice_none_and_keeps_the_tools(server):
    server.enqueue_text("42")
    provider(server).complete(ask(tools=[CALCULATOR], tool_choice="none"))
    body = server.requests[0].body
    assert body["tool_choice"] == {"type": "none"} and body["tools"][0]["name"] == "calculator"


def test_an_ordinary_request_leaves_tool_choice_to_the_model(server):
    server.enqueue_text("42")
    provider(server).complete(ask(tools=[CALCULATOR]))
    assert "tool_choice" not in server.requests[0].body


def test_an_empty_system_prompt_is_left_out(server):
    # The API refuses empty text blocks.
    server.enqueue_text("ok")
    provider(server).complete(ask(system=""))
    assert "system" not in server.requests[0].body


def test_structured_output_sends_the_plan_schema_and_the_reply_parses(server):
    plan = {
        "goal": "g",
        "steps": [{"id": "a", "title": "A", "instruction": "do", "role": "writer"}],
    }
    server.enqueue_json(plan)
    pieces = Pieces()
    reply = provider(server).complete(
        ask(output_schema=plan_json_schema(), purpose="planner"), on_text=pieces
    )
    assert json.loads(reply.text) == plan
    Plan.model_validate_json(reply.text)
    # The JSON document streams like any text, in pieces that are not JSON on their own.
    assert len(pieces) > 1 and "".join(pieces) == reply.text

    output_config = server.requests[0].body["output_config"]
    assert output_config["format"]["type"] == "json_schema"
    schema = output_config["format"]["schema"]
    assert set(schema["properties"]) == {"goal", "steps"}
    assert schema["required"] == ["steps"]
    step = schema["$defs"]["PlanStep"]
    assert schema["additionalProperties"] is False and step["additionalProperties"] is False
    assert schema["properties"]["steps"]["items"] == {"$ref": "#/$defs/PlanStep"}
    # Keywords structured output does not enforce move into the description.
    assert "pattern" not in step["properties"]["id"]
    assert "{pattern: ^[a-z0-9]" in step["properties"]["id"]["description"]


def test_a_tool_use_round_trip(server):
    tool_use_id = server.enqueue_tool_use(
        "calculator", {"expression": "6*7"}, text="Let me compute."
    )
    server.enqueue_text("It is 42.")
    p = provider(server)

    first = p.complete(
        ask(messages=[{"role": "user", "content": "What is 6*7?"}], tools=[CALCULATOR])
    )
    assert first.stop_reason == "tool_use"
    assert first.text == "Let me compute."
    assert first.tool_calls == [ToolCall(tool_use_id, "calculator", {"expression": "6*7"})]

    messages = [
        {"role": "user", "content": "What is 6*7?"},
        {"role": "assistant", "content": first.text, "tool_calls": first.tool_calls},
        {"role": "tool", "results": [ToolResult(tool_use_id, "6*7 = 42")]},
    ]
    second = p.complete(ask(messages=messages, tools=[CALCULATOR]))
    assert (second.text, second.stop_reason) == ("It is 42.", "end_turn")

    wire = server.requests[1].body["messages"]
    assert wire[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me compute."},
            {
                "type": "tool_use",
                "id": tool_use_id,
                "name": "calculator",
                "input": {"expression": "6*7"},
            },
        ],
    }
    assert wire[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": tool_use_id,
                "content": "6*7 = 42",
                "is_error": False,
            }
        ],
    }


def test_streamed_tool_arguments_parse_into_the_tool_call(server):
    # Long enough that the fake sends the JSON in several input_json_delta pieces.
    arguments = {
        "expression": "6*7 + 1000 - 3",
        "precision": 2,
        "options": {"round": True, "tags": ["a", "b"], "note": None},
    }
    tool_use_id = server.enqueue_tool_use("calculator", arguments, text="Computing.")
    pieces = Pieces()
    reply = provider(server).complete(ask(tools=[CALCULATOR]), on_text=pieces)
    assert reply.tool_calls == [ToolCall(tool_use_id, "calculator", arguments)]
    assert reply.stop_reason == "tool_use"
    # Only text reaches on_text, never the tool's JSON.
    assert "".join(pieces) == reply.text == "Computing."


def test_a_tool_call_cut_off_at_max_tokens_is_marked_unreadable(server):
    # The SDK reads unfinished tool JSON leniently, so the arguments of the call the limit
    # interrupted cannot be trusted; the call before it finished and stays as it is.
    server.enqueue_reply(
        [
            {"type": "tool_use", "id": "toolu_done", "name": "calculator", "input": {"a": 1}},
            {"type": "tool_use", "id": "toolu_cut", "name": "calculator", "input": {"a": 2}},
        ],
        stop_reason="max_tokens",
    )
    done, cut = provider(server).complete(ask(tools=[CALCULATOR])).tool_calls
    assert done == ToolCall("toolu_done", "calculator", {"a": 1})
    assert (cut.id, cut.arguments) == ("toolu_cut", {"a": 2})
    assert cut.parse_error == (
        "the arguments were cut off at the max_tokens limit; call the tool again"
    )


@pytest.mark.parametrize("stop_reason", ["refusal", "model_context_window_exceeded"])
def test_stop_reasons_the_agents_fail_on_map_through(server, stop_reason):
    server.enqueue_text("I can only say this much", stop_reason=stop_reason)
    reply = provider(server).complete(ask())
    assert (reply.stop_reason, reply.text) == (stop_reason, "I can only say this much")


def test_a_failed_tool_goes_back_with_is_error_and_no_empty_text_block(server):
    tool_use_id = server.enqueue_tool_use("calculator", {"expression": "1/0"})
    server.enqueue_text("Division by zero.")
    p = provider(server)
    first = p.complete(ask(tools=[CALCULATOR]))
    assert first.text == ""
    messages = [
        {"role": "user", "content": "What is 1/0?"},
        {"role": "assistant", "content": "", "tool_calls": first.tool_calls},
        {"role": "tool", "results": [ToolResult(tool_use_id, "division by zero", is_error=True)]},
    ]
    p.complete(ask(messages=messages, tools=[CALCULATOR]))
    wire = server.requests[1].body["messages"]
    assert [block["type"] for block in wire[1]["content"]] == ["tool_use"]
    assert wire[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": "division by zero",
            "is_error": True,
        }
    ]


def test_an_empty_assistant_turn_is_dropped(server):
    # The API refuses empty messages; it merges the consecutive user turns left behind.
    server.enqueue_text("ok")
    messages = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "two"},
    ]
    provider(server).complete(ask(messages=messages))
    assert server.requests[0].body["messages"] == [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"},
    ]


def test_a_tool_result_that_answers_nothing_is_refused_like_the_api_does(server):
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hm"},
        {"role": "tool", "results": [ToolResult("toolu_nope", "x")]},
    ]
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask(messages=messages))
    assert exc.value.status == 400
    assert str(exc.value).startswith(
        "Anthropic refused the request (400): messages.2.content: unexpected `tool_use_id`"
    )


def test_a_required_call_names_its_tool(server):
    server.enqueue_text("42")
    provider(server).complete(ask(tools=[CALCULATOR], required_tools=("calculator",)))
    assert server.requests[0].body["tool_choice"] == {"type": "tool", "name": "calculator"}
