"""The Anthropic provider through the real SDK, against a local server speaking its protocol.

Nothing here patches our code or the SDK: the SDK makes real HTTP requests to FakeAnthropic.
The provider always streams, so every test here goes through the SDK's streaming path.
"""

from __future__ import annotations

import json
import socket
import typing
import warnings

import anthropic
import pytest

from planner_ui.core.plan import Plan, plan_json_schema
from planner_ui.providers.anthropic import AnthropicProvider, make_client
from planner_ui.providers.base import (
    ModelRequest,
    ProviderError,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)
from tests.fakes.anthropic_server import FakeAnthropic

MODEL = "claude-sonnet-5-5"
LONG_TEXT = "A reply long enough to arrive in several pieces, as a real stream would deliver it."
# The ids agentsite/settings.py defaults to for the planner and the executors.
DEFAULT_MODELS = ["claude-opus-5-5", "claude-sonnet-5-5"]
CALCULATOR = ToolSpec(
    "calculator",
    "Do arithmetic.",
    {"type": "object", "properties": {"expression": {"type": "string"}}},
)


@pytest.fixture
def server():
    with FakeAnthropic() as fake:
        yield fake
    # Every request, whatever the test, went out as a stream.
    assert all(request.body.get("stream") is True for request in fake.requests)


def provider(
    server: FakeAnthropic,
    *,
    key: str = "test-key",
    retries: int = 0,
    timeout: float = 5,
    model: str = MODEL,
) -> AnthropicProvider:
    client = make_client(
        api_key=key, base_url=server.base_url, timeout=timeout, max_retries=retries
    )
    return AnthropicProvider(model, client)


def ask(**kwargs) -> ModelRequest:
    kwargs.setdefault("system", "You are terse.")
    kwargs.setdefault("messages", [{"role": "user", "content": "Say hi"}])
    return ModelRequest(**kwargs)


class Pieces(list):
    """An on_text sink that keeps what it was given."""

    def __call__(self, text: str) -> None:
        self.append(text)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


# --- errors ------------------------------------------------------------------------------------


def test_a_wrong_key_names_the_variable_to_fix(server):
    with pytest.raises(ProviderError) as exc:
        provider(server, key="wrong").complete(ask())
    assert exc.value.status == 401
    assert str(exc.value) == (
        "Anthropic rejected the API key (401 authentication_error): check ANTHROPIC_API_KEY. "
        "invalid x-api-key"
    )
    assert json.loads(exc.value.body)["error"] == {
        "type": "authentication_error",
        "message": "invalid x-api-key",
    }
    assert server.requests[0].api_key == "wrong"


def test_the_key_never_appears_in_an_error(server):
    secret = "sk-ant-api03-very-secret-key"
    with pytest.raises(ProviderError) as exc:
        provider(server, key=secret).complete(ask())
    assert "ANTHROPIC_API_KEY" in str(exc.value)
    assert secret not in str(exc.value) and secret not in exc.value.body
    assert server.requests[0].api_key == secret


def test_a_key_echoed_by_the_server_is_blanked_out(server):
    # The real API does not echo keys; a proxy in between might.
    server.enqueue_error(401, "authentication_error", "key test-key was revoked")
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert str(exc.value) == (
        "Anthropic rejected the API key (401 authentication_error): check ANTHROPIC_API_KEY. "
        "key [redacted] was revoked"
    )
    assert "test-key" not in exc.value.body
    assert json.loads(exc.value.body)["error"]["message"] == "key [redacted] was revoked"


def test_overloaded_without_retries_is_an_error(server):
    server.enqueue_error(529, "overloaded_error", "Overloaded")
    with pytest.raises(ProviderError) as exc:
        provider(server, retries=0).complete(ask())
    assert exc.value.status == 529
    assert str(exc.value) == "Anthropic is overloaded (529) and retries are off: Overloaded"
    assert json.loads(exc.value.body)["error"]["type"] == "overloaded_error"
    assert len(server.requests) == 1


def test_overloaded_then_success_is_retried_by_the_sdk(server):
    server.enqueue_error(529, "overloaded_error", "Overloaded")
    server.enqueue_text("fine now")
    reply = provider(server, retries=1).complete(ask())
    assert reply.text == "fine now"
    first, retry = server.requests
    assert (first.headers["x-stainless-retry-count"], retry.headers["x-stainless-retry-count"]) == (
        "0",
        "1",
    )
    # The fake answers retry-after-ms: 1, so the SDK does not back off for its 0.375-0.5 s.
    assert retry.received_at - first.received_at < 0.3


def test_overloaded_twice_with_one_retry_says_so(server):
    server.enqueue_error(529, "overloaded_error", "Overloaded")
    server.enqueue_error(529, "overloaded_error", "Overloaded")
    with pytest.raises(ProviderError) as exc:
        provider(server, retries=1).complete(ask())
    assert str(exc.value) == "Anthropic is overloaded (529) and 1 retry did not help: Overloaded"


def test_rate_limited_then_success_is_retried_by_the_sdk(server):
    server.enqueue_error(429, "rate_limit_error", "Too many requests")
    server.enqueue_text("fine now")
    pieces = Pieces()
    reply = provider(server, retries=1).complete(ask(), on_text=pieces)
    assert reply.text == "".join(pieces) == "fine now"
    assert len(server.requests) == 2
    assert server.requests[1].headers["x-stainless-retry-count"] == "1"


def test_rate_limited(server):
    server.enqueue_error(
        429, "rate_limit_error", "Number of request tokens has exceeded your limit"
    )
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert exc.value.status == 429
    assert str(exc.value) == (
        "Anthropic rate-limited the request (429) and retries are off: "
        "Number of request tokens has exceeded your limit"
    )


def test_a_server_error(server):
    server.enqueue_error(500, "api_error", "Internal server error")
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert exc.value.status == 500
    assert str(exc.value) == (
        "Anthropic had a server error (500) and retries are off: Internal server error"
    )


def test_a_bad_request_shows_the_apis_message(server):
    server.enqueue_error(400, "invalid_request_error", "max_tokens: Input should be > 0")
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert exc.value.status == 400
    assert str(exc.value) == "Anthropic refused the request (400): max_tokens: Input should be > 0"


@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 215000 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000",
    ],
)
def test_a_prompt_too_long_for_the_context_window_says_so(server, message):
    server.enqueue_error(400, "invalid_request_error", message)
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert exc.value.status == 400
    assert str(exc.value) == f"The request is longer than the model's context window: {message}"
    assert json.loads(exc.value.body)["error"]["message"] == message


# --- errors in the middle of a stream ---------------------------------------------------------


def test_an_error_event_mid_stream_is_a_clear_error(server):
    server.enqueue_stream_error("overloaded_error", "Overloaded", text="The answer is")
    pieces = Pieces()
    with pytest.raises(ProviderError) as exc:
        provider(server, retries=0).complete(ask(), on_text=pieces)
    assert str(exc.value) == (
        "Anthropic reported overloaded_error in the middle of the reply: Overloaded "
        "(retries are off)"
    )
    # The HTTP status was 200: the error came inside the stream.
    assert exc.value.status is None
    assert json.loads(exc.value.body)["error"] == {
        "type": "overloaded_error",
        "message": "Overloaded",
    }
    assert "".join(pieces) == "The answer is"


@pytest.mark.parametrize(
    ("text_before_error", "watch"),
    [("", True), ("Half an answer", False)],
    ids=["nothing-streamed-yet", "text-streamed-but-nobody-watching"],
)
def test_an_error_event_mid_stream_is_retried_while_nothing_was_shown(
    server, text_before_error, watch
):
    server.enqueue_stream_error("overloaded_error", "Overloaded", text=text_before_error)
    server.enqueue_text("The whole answer.")
    pieces = Pieces()
    reply = provider(server, retries=1).complete(ask(), on_text=pieces if watch else None)
    assert reply.text == "The whole answer."
    assert len(server.requests) == 2
    if watch:
        assert "".join(pieces) == "The whole answer."


def test_an_error_event_after_shown_text_is_not_retried(server):
    # A retry would stream the start of the reply to on_text a second time.
    server.enqueue_stream_error("api_error", "Internal server error", text="Half an answer")
    server.enqueue_text("never asked for")
    pieces = Pieces()
    with pytest.raises(ProviderError) as exc:
        provider(server, retries=2).complete(ask(), on_text=pieces)
    assert str(exc.value) == (
        "Anthropic reported api_error in the middle of the reply: Internal server error "
        "(not retried: part of the reply had already been shown)"
    )
    assert len(server.requests) == 1 and server.pending == 1


def test_error_events_mid_stream_are_retried_at_most_max_retries_times(server):
    server.enqueue_stream_error()
    server.enqueue_stream_error()
    server.enqueue_text("never asked for")
    with pytest.raises(ProviderError) as exc:
        provider(server, retries=1).complete(ask(), on_text=Pieces())
    assert str(exc.value) == (
        "Anthropic reported overloaded_error in the middle of the reply: Overloaded "
        "(1 retry did not help)"
    )
    assert len(server.requests) == 2 and server.pending == 1


def test_other_error_events_mid_stream_are_not_retried(server):
    server.enqueue_stream_error("invalid_request_error", "Output blocked by content filtering")
    server.enqueue_text("never asked for")
    with pytest.raises(ProviderError) as exc:
        provider(server, retries=2).complete(ask())
    assert str(exc.value) == (
        "Anthropic reported invalid_request_error in the middle of the reply: "
        "Output blocked by content filtering"
    )
    assert len(server.requests) == 1


def test_a_stream_that_stalls_past_the_timeout(server):
    server.enqueue_text(LONG_TEXT, stall_s=1.0)
    pieces = Pieces()
    with pytest.raises(ProviderError) as exc:
        provider(server, timeout=0.3, retries=2).complete(ask(), on_text=pieces)
    assert str(exc.value) == (
        "The reply from Anthropic stalled in the middle of the stream for longer than the "
        "0.3 s timeout."
    )
    assert pieces and LONG_TEXT.startswith("".join(pieces))
    # Not retried: the stream had started.
    assert len(server.requests) == 1


def test_a_stream_that_ends_before_message_stop(server):
    server.enqueue_text(LONG_TEXT, cut="close")
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert str(exc.value) == (
        "The Anthropic stream ended before the reply was complete "
        "(the connection closed without a message_stop event)."
    )


def test_a_stream_whose_connection_is_reset(server):
    server.enqueue_text(LONG_TEXT, cut="reset")
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert str(exc.value).startswith(
        "The connection to Anthropic broke in the middle of the reply: "
    )


def test_an_empty_queue_is_a_clear_error_and_not_retried(server):
    with pytest.raises(ProviderError) as exc:
        provider(server, retries=2).complete(ask())
    assert exc.value.status == 500
    assert "FakeAnthropic has no reply queued" in str(exc.value)
    assert len(server.requests) == 1


def test_an_unreachable_server_is_a_clear_error():
    base_url = f"http://127.0.0.1:{closed_port()}"
    client = make_client(api_key="k", base_url=base_url, max_retries=0)
    with pytest.raises(ProviderError) as exc:
        AnthropicProvider(MODEL, client).complete(ask())
    assert str(exc.value).startswith(f"Cannot reach the Anthropic API at {base_url}")
    assert exc.value.status is None


def test_a_slow_answer_times_out(server):
    server.enqueue_text("too late", delay_s=1.0)
    with pytest.raises(ProviderError) as exc:
        provider(server, timeout=0.2).complete(ask())
    assert str(exc.value) == "The request to Anthropic timed out after 0.2 s (and retries are off)."


def test_make_client_without_a_key_says_what_to_set():
    with pytest.raises(ProviderError) as exc:
        make_client(api_key="")
    assert str(exc.value) == (
        "No Anthropic API key: set ANTHROPIC_API_KEY in the environment, or unset "
        "AGENTSITE_PROVIDER to use the offline provider."
    )


# --- model ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize("model", DEFAULT_MODELS)
def test_the_default_models_are_known_and_not_deprecated(server, model):
    assert model in typing.get_args(typing.get_args(anthropic.types.Model)[0])
    server.enqueue_text("ok")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        provider(server, model=model).complete(ask())


def test_the_deprecation_check_above_can_fail(server):
    # The SDK warns in messages.stream (as in .create) for ids in its DEPRECATED_MODELS; prove
    # it still does.
    server.enqueue_text("ok")
    with pytest.warns(DeprecationWarning, match="claude-sonnet-4-5"):
        provider(server, model="claude-sonnet-4-5").complete(ask())


# --- the fake's stream, through the SDK directly ----------------------------------------------


def test_the_fake_streams_text_as_the_sdk_expects(server):
    server.enqueue_text("A reply long enough to arrive in several deltas.", input_tokens=7)
    client = make_client(api_key="test-key", base_url=server.base_url, max_retries=0)
    with client.messages.stream(
        model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(pieces) > 1
    assert "".join(pieces) == "A reply long enough to arrive in several deltas."
    assert final.content[0].text == "".join(pieces)
    assert (final.stop_reason, final.model) == ("end_turn", MODEL)
    assert (final.usage.input_tokens, final.usage.output_tokens) == (7, 5)
    assert server.requests[0].body["stream"] is True


def test_the_fake_streams_tool_use_input_as_json_deltas(server):
    arguments = {"expression": "6*7 + 1000 - 3", "precision": 2}
    tool_use_id = server.enqueue_tool_use("calculator", arguments, text="Computing.")
    client = make_client(api_key="test-key", base_url=server.base_url, max_retries=0)
    with client.messages.stream(
        model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert final.stop_reason == "tool_use"
    text, tool_use = final.content
    assert text.text == "Computing."
    assert (tool_use.id, tool_use.name, tool_use.input) == (tool_use_id, "calculator", arguments)
