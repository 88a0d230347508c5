"""The OpenAI-compatible provider through the real SDK, against a local server speaking its
protocol: requests and replies, tool calls, structured output, finish reasons.

Nothing here patches our code or the SDK: the SDK makes real HTTP requests to FakeOpenAI.
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
from planner_ui.providers.openai_compat import make_client
from tests.providers.conftest import CALCULATOR, ask

from .conftest import MODEL, provider

# --- requests and replies ----------------------------------------------------------------------


def test_a_text_reply_maps_text_stop_reason_model_and_usage(server):
    server.enqueue_text("Hi there", prompt_tokens=120, completion_tokens=7, cached_tokens=100)
    reply = provider(server).complete(ask(max_tokens=321))
    assert reply.text == "Hi there"
    assert reply.tool_calls == []
    assert reply.stop_reason == "end_turn"
    assert reply.model == MODEL
    # prompt_tokens already counts the cached ones.
    assert reply.usage == Usage(input_tokens=120, output_tokens=7, cache_read_tokens=100)
    body = server.requests[0].body
    assert body["model"] == MODEL
    assert body["max_tokens"] == 321
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Say hi"},
    ]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert "tools" not in body and "response_format" not in body
    assert "max_completion_tokens" not in body
    assert (server.requests[0].method, server.requests[0].path) == ("POST", "/v1/chat/completions")


def test_cache_writes_are_counted_when_the_server_reports_them(server):
    server.enqueue_text("ok", prompt_tokens=50, cached_tokens=0, cache_write_tokens=40)
    reply = provider(server).complete(ask())
    assert reply.usage == Usage(input_tokens=50, output_tokens=5, cache_write_tokens=40)


def test_the_reply_names_the_model_the_server_reported(server):
    server.enqueue_text("ok", model="gpt-5.5-2026-09-01")
    assert provider(server, model="gpt-5.5").complete(ask()).model == "gpt-5.5-2026-09-01"


def test_the_key_arrives_as_a_bearer_token(server):
    server.enqueue_text("ok")
    provider(server).complete(ask())
    assert server.requests[0].headers["authorization"] == "Bearer test-key"


def test_text_streams_to_on_text_in_several_pieces(server):
    text = "A reply long enough to arrive in several deltas."
    server.enqueue_text(text)
    pieces: list[str] = []
    reply = provider(server).complete(ask(), on_text=pieces.append)
    assert len(pieces) > 1
    assert "".join(pieces) == text == reply.text


def test_an_exception_from_on_text_passes_through_unchanged(server):
    server.enqueue_text("Some text")

    def refuse(piece: str) -> None:
        raise KeyError("the sink is closed")

    with pytest.raises(KeyError, match="the sink is closed"):
        provider(server).complete(ask(), on_text=refuse)


def test_an_empty_system_prompt_is_left_out(server):
    server.enqueue_text("ok")
    provider(server).complete(ask(system=""))
    assert server.requests[0].body["messages"] == [{"role": "user", "content": "Say hi"}]


def test_tools_are_sent_as_functions(server):
    server.enqueue_text("ok")
    provider(server).complete(ask(tools=[CALCULATOR]))
    assert server.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "calculator",
                "description": "Do arithmetic.",
                "parameters": {
                    "type": "object",
                    "properties": {"expression": {"type": "string"}},
                },
            },
        }
    ]


def test_tool_calls_are_assembled_from_their_fragments(server):
    arguments = {"expression": "6*7 + 1000 - 3", "note": "long enough to be split"}
    first_id, second_id = server.enqueue_tool_calls(
        [("calculator", arguments), ("calculator", {"expression": "1+1"})], text="Computing."
    )
    pieces: list[str] = []
    reply = provider(server).complete(ask(tools=[CALCULATOR]), on_text=pieces.append)
    assert reply.stop_reason == "tool_use"
    assert reply.text == "".join(pieces) == "Computing."
    assert reply.tool_calls == [
        ToolCall(first_id, "calculator", arguments),
        ToolCall(second_id, "calculator", {"expression": "1+1"}),
    ]


def test_a_tool_round_trip_is_accepted_by_the_strict_server(server):
    ids = server.enqueue_tool_calls(
        [("calculator", {"expression": "6*7"}), ("calculator", {"expression": "1/0"})]
    )
    server.enqueue_text("It is 42.")
    p = provider(server)

    first = p.complete(ask(tools=[CALCULATOR]))
    messages = [
        {"role": "user", "content": "What is 6*7?"},
        {"role": "assistant", "content": first.text, "tool_calls": first.tool_calls},
        {
            "role": "tool",
            "results": [
                ToolResult(ids[0], "6*7 = 42"),
                ToolResult(ids[1], "division by zero", is_error=True),
            ],
        },
    ]
    second = p.complete(ask(messages=messages, tools=[CALCULATOR]))
    assert (second.text, second.stop_reason) == ("It is 42.", "end_turn")

    wire = server.requests[1].body["messages"]
    assert wire[2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": ids[0],
                    "type": "function",
                    "function": {"name": "calculator", "arguments": '{"expression": "6*7"}'},
                },
                {
                    "id": ids[1],
                    "type": "function",
                    "function": {"name": "calculator", "arguments": '{"expression": "1/0"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": ids[0], "content": "6*7 = 42"},
        {"role": "tool", "tool_call_id": ids[1], "content": "Error: division by zero"},
    ]


def test_an_assistant_turn_keeps_its_text_beside_tool_calls(server):
    server.enqueue_text("ok")
    call = ToolCall("call_1", "calculator", {"expression": "2+2"})
    messages = [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "Let me compute.", "tool_calls": [call]},
        {"role": "tool", "results": [ToolResult("call_1", "4")]},
    ]
    provider(server).complete(ask(messages=messages))
    assert server.requests[0].body["messages"][2]["content"] == "Let me compute."


def test_an_empty_assistant_turn_is_dropped(server):
    server.enqueue_text("ok")
    messages = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "two"},
    ]
    provider(server).complete(ask(messages=messages, system=""))
    assert server.requests[0].body["messages"] == [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"},
    ]


def test_a_tool_result_that_answers_nothing_is_refused_like_the_api_does(server):
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hm"},
        {"role": "tool", "results": [ToolResult("call_nope", "x")]},
    ]
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask(messages=messages))
    assert exc.value.status == 400
    assert str(exc.value) == (
        f"The OpenAI-compatible server at {server.base_url} refused the request (400): "
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
        "message with 'tool_calls'."
    )


def test_unanswered_tool_calls_are_refused_like_the_api_does(server):
    call = ToolCall("call_1", "calculator", {"expression": "2+2"})
    messages = [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "user", "content": "well?"},
    ]
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask(messages=messages))
    assert exc.value.status == 400
    assert str(exc.value).endswith(
        "The following tool_call_ids did not have response messages: call_1"
    )


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"expression": "6*7"', "Expecting ',' delimiter at character 20"),
        ("[1, 2]", "expected an object, got list"),
    ],
)
def test_unreadable_tool_arguments_give_a_parse_error_not_an_exception(server, arguments, problem):
    (call_id,) = server.enqueue_tool_calls([("calculator", arguments)])
    (call,) = provider(server).complete(ask(tools=[CALCULATOR])).tool_calls
    assert call == ToolCall(
        call_id,
        "calculator",
        {},
        parse_error=f"the arguments were not valid JSON: {problem}; they were: {arguments}",
    )


def test_a_parse_error_quotes_at_most_200_characters_of_the_arguments(server):
    arguments = '{"expression": "' + "1+" * 300
    server.enqueue_tool_calls([("calculator", arguments)])
    (call,) = provider(server).complete(ask(tools=[CALCULATOR])).tool_calls
    assert call.parse_error.endswith("; they were: " + arguments[:200])


@pytest.mark.parametrize(
    ("arguments", "parsed"),
    [("", {}), (json.dumps(json.dumps({"expression": "1+1"})), {"expression": "1+1"})],
    ids=["empty", "encoded-twice"],
)
def test_tool_arguments_small_models_send_are_read(server, arguments, parsed):
    server.enqueue_tool_calls([("calculator", arguments)])
    (call,) = provider(server).complete(ask(tools=[CALCULATOR])).tool_calls
    assert (call.arguments, call.parse_error) == (parsed, "")


def test_tool_calls_without_ids_get_unique_ones(server):
    server.enqueue_tool_calls(
        [("calculator", {"expression": "1"}), ("calculator", {"expression": "2"})],
        with_ids=False,
    )
    calls = provider(server).complete(ask(tools=[CALCULATOR])).tool_calls
    assert [c.arguments for c in calls] == [{"expression": "1"}, {"expression": "2"}]
    assert all(c.id.startswith("call_") for c in calls)
    assert calls[0].id != calls[1].id


def test_structured_output_sends_the_schema_and_the_reply_parses(server):
    plan = {
        "goal": "g",
        "steps": [{"id": "a", "title": "A", "instruction": "do", "role": "writer"}],
    }
    server.enqueue_json(plan)
    reply = provider(server).complete(ask(output_schema=plan_json_schema(), purpose="planner"))
    Plan.model_validate_json(reply.text)
    assert server.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": plan_json_schema(), "strict": False},
    }


def test_a_structured_output_refusal_is_a_refusal(server):
    server.enqueue_refusal("I can't help with that.")
    reply = provider(server).complete(ask(output_schema=plan_json_schema()))
    assert (reply.text, reply.stop_reason) == ("I can't help with that.", "refusal")


@pytest.mark.parametrize(
    ("finish_reason", "stop_reason"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("content_filter", "refusal"),
        ("something_new", "something_new"),
    ],
)
def test_finish_reasons_map_to_stop_reasons(server, finish_reason, stop_reason):
    server.enqueue_text("Partial", finish_reason=finish_reason)
    assert provider(server).complete(ask()).stop_reason == stop_reason


def test_tool_calls_with_finish_reason_stop_are_tool_use(server):
    # Ollama reports "stop" for a reply that calls tools.
    server.enqueue_tool_calls([("calculator", {"expression": "1"})], finish_reason="stop")
    assert provider(server).complete(ask(tools=[CALCULATOR])).stop_reason == "tool_use"


def test_a_filtered_reply_with_tool_calls_stays_a_refusal(server):
    server.enqueue_tool_calls([("calculator", {"expression": "1"})], finish_reason="content_filter")
    assert provider(server).complete(ask(tools=[CALCULATOR])).stop_reason == "refusal"


def test_a_server_that_sends_no_usage_counts_zero(server):
    server.enqueue_text("ok", with_usage=False)
    reply = provider(server).complete(ask())
    assert (reply.text, reply.usage) == ("ok", Usage())


def test_reasoning_models_that_refuse_max_tokens_get_max_completion_tokens(server):
    server.enqueue_error(
        400,
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
        param="max_tokens",
        code="unsupported_parameter",
    )
    server.enqueue_text("first")
    server.enqueue_text("second")
    p = provider(server)
    assert p.complete(ask(max_tokens=300)).text == "first"
    assert p.complete(ask(max_tokens=300)).text == "second"
    refused, retried, later = (r.body for r in server.requests)
    assert refused["max_tokens"] == 300
    assert "max_tokens" not in retried and retried["max_completion_tokens"] == 300
    assert "max_tokens" not in later and later["max_completion_tokens"] == 300


def test_the_fake_answers_a_non_streamed_request_as_the_sdk_expects(server):
    ids = server.enqueue_tool_calls([("calculator", {"expression": "1"})], text="Sure.")
    client = make_client(api_key="test-key", base_url=server.base_url, max_retries=0)
    completion = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "hi"}]
    )
    (choice,) = completion.choices
    assert (choice.message.content, choice.finish_reason) == ("Sure.", "tool_calls")
    assert choice.message.tool_calls[0].id == ids[0]
    assert choice.message.tool_calls[0].function.arguments == '{"expression": "1"}'
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (10, 5)
