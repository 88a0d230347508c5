"""The OpenAI-compatible provider's errors: keys, retries, unknown models, streams that break."""

from __future__ import annotations

import json

import pytest

from planner_ui.core.errors import ReplyCutOff
from planner_ui.providers.base import ProviderError
from planner_ui.providers.openai_compat import OpenAICompatProvider, make_client
from planner_ui.tools import REGISTRY
from tests.fakes.openai_server import FakeOpenAI
from tests.providers.conftest import ask, closed_port

from .conftest import MODEL, provider

# --- errors ------------------------------------------------------------------------------------


def test_a_wrong_key_names_the_variable_and_never_the_key(server):
    with pytest.raises(ProviderError) as exc:
        provider(server, key="sk-wrong-secret").complete(ask())
    assert exc.value.status == 401
    assert str(exc.value) == (
        f"The OpenAI-compatible server at {server.base_url} rejected the API key (401): check "
        "OPENAI_API_KEY. Incorrect API key provided: ***. You can find your API key at "
        "https://platform.openai.com/account/api-keys."
    )
    assert "sk-wrong-secret" not in exc.value.body
    assert json.loads(exc.value.body)["code"] == "invalid_api_key"
    assert server.requests[0].api_key == "sk-wrong-secret"


def test_rate_limited_then_success_is_retried_by_the_sdk(server):
    server.enqueue_error(429, "Rate limit reached", type="requests", retry_after_ms=1)
    server.enqueue_text("fine now")
    reply = provider(server, retries=1).complete(ask())
    assert reply.text == "fine now"
    first, retry = server.requests
    assert (first.headers["x-stainless-retry-count"], retry.headers["x-stainless-retry-count"]) == (
        "0",
        "1",
    )
    # retry-after-ms: 1, so the SDK does not back off for its 0.375-0.5 s.
    assert retry.received_at - first.received_at < 0.3


@pytest.mark.parametrize(
    ("status", "message", "says"),
    [
        (429, "Rate limit reached", "rate-limited the request (429)"),
        (500, "The server had an error", "had a server error (500)"),
    ],
)
def test_a_retryable_error_with_retries_off_names_the_status(server, status, message, says):
    server.enqueue_error(status, message, type="server_error")
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert exc.value.status == status
    assert str(exc.value) == (
        f"The OpenAI-compatible server at {server.base_url} {says} and retries are off: {message}"
    )
    assert len(server.requests) == 1


def test_a_server_error_twice_with_one_retry_says_so(server):
    server.enqueue_error(503, "busy", type="server_error", retry_after_ms=1)
    server.enqueue_error(503, "busy", type="server_error", retry_after_ms=1)
    with pytest.raises(ProviderError) as exc:
        provider(server, retries=1).complete(ask())
    assert str(exc.value).endswith("had a server error (503) and 1 retry did not help: busy")


def test_an_unknown_model_says_how_to_get_it(server):
    server.enqueue_error(404, 'model "qwen3:8b" not found, try pulling it first', type="api_error")
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert exc.value.status == 404
    assert str(exc.value) == (
        f"The OpenAI-compatible server at {server.base_url} has no model 'qwen3:8b' (404): "
        "check the model id; Ollama needs `ollama pull qwen3:8b` first. "
        'model "qwen3:8b" not found, try pulling it first'
    )


def test_a_base_url_without_v1_says_so():
    with FakeOpenAI() as server:
        client = make_client(
            api_key="test-key", base_url=server.base_url.removesuffix("/v1"), max_retries=0
        )
        with pytest.raises(ProviderError) as exc:
            OpenAICompatProvider(MODEL, client).complete(ask())
    assert exc.value.status == 404
    assert "has no chat completions endpoint (404): OPENAI_BASE_URL usually ends in /v1." in str(
        exc.value
    )


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
        "the request exceeds the available context size, try increasing it",
    ],
)
def test_a_prompt_too_long_for_the_context_window_says_so(server, message):
    server.enqueue_error(400, message)
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert exc.value.status == 400
    assert str(exc.value) == f"The request is longer than the model's context window: {message}"


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        # vLLM started with --api-key
        (401, {"error": "Unauthorized"}, "check OPENAI_API_KEY. Unauthorized"),
        # older vLLM: the error object is the whole body
        (
            422,
            {"object": "error", "message": "bad tool schema", "type": "BadRequestError"},
            "refused the request (422): bad tool schema",
        ),
    ],
)
def test_error_bodies_of_other_shapes_are_quoted(server, status, body, expected):
    server.enqueue_error(status, "", body=body)
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert exc.value.status == status
    assert str(exc.value).endswith(expected)


def test_an_error_mid_stream_is_a_provider_error(server):
    server.enqueue_stream_error("The model crashed", text="Half an ans")
    pieces: list[str] = []
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask(), on_text=pieces.append)
    assert str(exc.value) == (
        f"The OpenAI-compatible server at {server.base_url} failed mid-reply: The model crashed"
    )
    assert json.loads(exc.value.body)["message"] == "The model crashed"
    assert "".join(pieces) == "Half an ans"


def test_a_bare_error_object_mid_stream_is_a_provider_error(server):
    server.enqueue_stream_error("CUDA out of memory", text="Half", legacy=True)
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert str(exc.value) == (
        f"The OpenAI-compatible server at {server.base_url} failed mid-reply: CUDA out of memory"
    )


def test_a_stream_that_ends_early_is_not_taken_for_the_whole_reply(server):
    server.enqueue_cut_stream("The answer is")
    with pytest.raises(ProviderError) as exc:
        provider(server).complete(ask())
    assert str(exc.value) == (
        f"The OpenAI-compatible server at {server.base_url} ended the stream before the reply "
        "was finished (no finish_reason)."
    )


def test_a_connection_broken_mid_stream_is_a_provider_error(server):
    server.enqueue_cut_stream("The answer is", incomplete_body=True)
    with pytest.raises(ProviderError) as exc:
        provider(server, retries=2).complete(ask())
    assert str(exc.value).startswith(
        f"The connection to the OpenAI-compatible server at {server.base_url} broke mid-reply: "
    )
    assert len(server.requests) == 1  # the SDK retries requests, not streams


def test_a_stream_that_stalls_times_out(server):
    server.enqueue_text("too late", stall_s=1.0)
    with pytest.raises(ProviderError) as exc:
        provider(server, timeout=0.2).complete(ask())
    assert str(exc.value) == (
        f"The reply from the OpenAI-compatible server at {server.base_url} stalled for over 0.2 s."
    )


def test_an_empty_queue_is_a_clear_error_and_not_retried(server):
    with pytest.raises(ProviderError) as exc:
        provider(server, retries=2).complete(ask())
    assert exc.value.status == 500
    assert "FakeOpenAI has no reply queued" in str(exc.value)
    assert len(server.requests) == 1


def test_an_unreachable_server_names_its_url():
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    client = make_client(api_key="", base_url=base_url, max_retries=0)
    with pytest.raises(ProviderError) as exc:
        OpenAICompatProvider(MODEL, client).complete(ask())
    assert str(exc.value).startswith(
        f"Cannot reach the OpenAI-compatible server at {base_url} (is it running? e.g. "
        "`ollama serve`) and retries are off: "
    )
    assert exc.value.status is None


def test_a_slow_answer_times_out(server):
    server.enqueue_text("too late", delay_s=1.0)
    with pytest.raises(ProviderError) as exc:
        provider(server, timeout=0.2).complete(ask())
    assert str(exc.value) == (
        f"The request to the OpenAI-compatible server at {server.base_url} timed out after "
        "0.2 s (retries are off)."
    )


# --- a tool call cut off at max_tokens ------------------------------------------------------

LONG_POEM = {"path": "poem.txt", "content": "In the annals of time " * 100}


def write_file_tool():
    return REGISTRY["write_file"].spec()


def test_llamacpps_500_for_a_cut_off_tool_call_says_so_and_is_not_retried(server):
    server.enqueue_long_tool_call("write_file", LONG_POEM, server="llamacpp")
    with pytest.raises(ReplyCutOff) as exc:
        provider(server, retries=2).complete(ask(tools=[write_file_tool()], max_tokens=100))
    message = str(exc.value)
    assert message.startswith(
        "The model's tool call was cut off before its arguments were complete, most likely "
        f"at the reply's limit of 100 tokens; the OpenAI-compatible server at {server.base_url} "
        "could not parse them (500): Failed to parse tool call arguments as JSON"
    )
    assert exc.value.status == 500
    # Asked once: the SDK would retry a 500 twice, and each retry writes the same call again.
    assert len(server.requests) == 1


def test_other_500s_are_still_retried(server):
    server.enqueue_error(500, "slot unavailable", type="server_error", retry_after_ms=1)
    server.enqueue_text("Hi")
    assert provider(server, retries=1).complete(ask()).text == "Hi"
    assert len(server.requests) == 2


def test_the_same_call_fits_with_more_room(server):
    server.enqueue_long_tool_call("write_file", LONG_POEM, server="llamacpp")
    reply = provider(server).complete(ask(tools=[write_file_tool()], max_tokens=2000))
    (call,) = reply.tool_calls
    assert (call.name, call.arguments, call.parse_error) == ("write_file", LONG_POEM, "")


def test_a_stream_cut_off_inside_tool_arguments_is_a_max_tokens_reply(server):
    server.enqueue_long_tool_call("write_file", LONG_POEM, server="stream")
    reply = provider(server).complete(ask(tools=[write_file_tool()], max_tokens=100))
    assert reply.stop_reason == "max_tokens"
    (call,) = reply.tool_calls
    assert call.arguments == {}
    assert call.parse_error.startswith("the arguments were not valid JSON: Unterminated string")
