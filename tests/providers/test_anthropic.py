"""The Anthropic provider through the real SDK, against a local server speaking its protocol."""

from __future__ import annotations

import json
import socket
import warnings

import pytest

from planner_ui.core.plan import plan_json_schema
from planner_ui.providers.anthropic import AnthropicProvider, make_client
from planner_ui.providers.base import ModelRequest, ProviderError, ToolCall, ToolResult, ToolSpec
from tests.fakes.anthropic_server import FakeAnthropic

MODEL = "claude-sonnet-5-5"


@pytest.fixture
def server():
    with FakeAnthropic() as fake:
        yield fake


def provider(
    server: FakeAnthropic, *, key: str = "test-key", retries: int = 0
) -> AnthropicProvider:
    client = make_client(api_key=key, base_url=server.base_url, timeout=5, max_retries=retries)
    return AnthropicProvider(MODEL, client)


def ask(**kwargs) -> ModelRequest:
    kwargs.setdefault("system", "You are terse.")
    kwargs.setdefault("messages", [{"role": "user", "content": "Say hi"}])
    return ModelRequest(**kwargs)


def test_text_reply_and_usage(server):
    server.enqueue_text("Hi there", input_tokens=12, output_tokens=3)
    reply = provider(server).complete(ask())
    assert (reply.text, reply.stop_reason, reply.model) == ("Hi there", "end_turn", MODEL)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (12, 3)
    sent = server.requests[0]
    assert sent.body["model"] == MODEL and sent.body["messages"] == [
        {"role": "user", "content": "Say hi"}
    ]
    key_header = sent.headers.get("x-api-key") or sent.headers.get("Authorization", "")
    assert key_header.endswith("test-key")


def test_cached_input_tokens_are_counted(server):
    server.enqueue_text(
        "ok",
        input_tokens=5,
        output_tokens=1,
        cache_read_input_tokens=100,
        cache_creation_input_tokens=20,
    )
    reply = provider(server).complete(ask())
    assert reply.usage.input_tokens == 125


def test_system_prompt_and_tools_carry_cache_control(server):
    server.enqueue_text("ok")
    spec = ToolSpec("calculator", "Do arithmetic.", {"type": "object", "properties": {}})
    provider(server).complete(ask(tools=[spec]))
    body = server.requests[0].body
    assert body["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["tools"] == [
        {
            "name": "calculator",
            "description": "Do arithmetic.",
            "input_schema": {"type": "object", "properties": {}},
            "cache_control": {"type": "ephemeral"},
        }
    ]


def test_structured_output_sends_the_plan_schema(server):
    plan = {
        "goal": "g",
        "steps": [{"id": "a", "title": "A", "instruction": "do", "role": "writer"}],
    }
    server.enqueue_json(plan)
    reply = provider(server).complete(ask(output_schema=plan_json_schema(), purpose="planner"))
    assert json.loads(reply.text) == plan
    assert server.requests[0].body["output_config"] == {
        "format": {"type": "json_schema", "schema": plan_json_schema()}
    }


def test_tool_use_round_trip(server):
    server.enqueue_tool_use("calculator", {"expression": "6*7"}, text="Let me compute.")
    server.enqueue_text("It is 42.")
    p = provider(server)
    spec = ToolSpec("calculator", "Do arithmetic.", {"type": "object", "properties": {}})
    first = p.complete(ask(tools=[spec]))
    assert first.stop_reason == "tool_use"
    (call,) = first.tool_calls
    assert (call.name, call.arguments) == ("calculator", {"expression": "6*7"})
    messages = [
        {"role": "user", "content": "What is 6*7?"},
        {"role": "assistant", "content": first.text, "tool_calls": [call]},
        {"role": "tool", "results": [ToolResult(call.id, "6*7 = 42", False)]},
    ]
    second = p.complete(ask(messages=messages, tools=[spec]))
    assert second.text == "It is 42."
    wire = server.requests[1].body["messages"]
    assert wire[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me compute."},
            {
                "type": "tool_use",
                "id": call.id,
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
                "tool_use_id": call.id,
                "content": "6*7 = 42",
                "is_error": False,
            }
        ],
    }


def test_a_wrong_key_is_a_clear_error(server):
    with pytest.raises(ProviderError) as exc:
        provider(server, key="wrong").complete(ask())
    assert exc.value.status == 401
    assert str(exc.value).startswith(
        "Anthropic rejected the API key (401 authentication_error): check ANTHROPIC_API_KEY."
    )


def test_overloaded_without_retries_is_an_error(server):
    server.enqueue_error(529, "overloaded_error", "Overloaded", {"retry-after": "0"})
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert exc.value.status == 529
    assert str(exc.value) == "Anthropic is overloaded (529) and retries did not help: Overloaded"
    assert "overloaded_error" in exc.value.body


def test_overloaded_then_success_is_retried_by_the_sdk(server):
    server.enqueue_error(529, "overloaded_error", "Overloaded", {"retry-after": "0"})
    server.enqueue_text("fine now")
    reply = provider(server, retries=1).complete(ask())
    assert reply.text == "fine now"
    assert len(server.requests) == 2


def test_a_bad_request_shows_the_apis_message(server):
    server.enqueue_error(400, "invalid_request_error", "prompt is too long")
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert str(exc.value) == "Anthropic refused the request (400): prompt is too long"


def test_an_unreachable_server_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = make_client(api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0)
    with pytest.raises(
        ProviderError, match=r"^Cannot reach the Anthropic API at http://127\.0\.0\.1"
    ):
        AnthropicProvider(MODEL, client).complete(ask())


def test_make_client_without_a_key_says_what_to_set():
    with pytest.raises(ProviderError) as exc:
        make_client(api_key="")
    assert str(exc.value) == (
        "No Anthropic API key: set ANTHROPIC_API_KEY in the environment, or unset "
        "AGENTSITE_PROVIDER to use the offline provider."
    )


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-sonnet-5-5"])
def test_default_models_are_not_deprecated(server, model):
    server.enqueue_text("ok")
    client = make_client(api_key="test-key", base_url=server.base_url, max_retries=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        AnthropicProvider(model, client).complete(ask())


def test_tool_calls_map_back_to_neutral_shape(server):
    server.enqueue_tool_use("read_file", {"path": "a.txt"})
    reply = provider(server).complete(ask())
    assert reply.tool_calls == [ToolCall(reply.tool_calls[0].id, "read_file", {"path": "a.txt"})]
