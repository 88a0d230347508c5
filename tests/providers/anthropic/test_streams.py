"""The Anthropic provider when a stream goes wrong, the model ids it defaults to, and the fake's
stream checked against the SDK itself."""

from __future__ import annotations

import json
import typing
import warnings

import anthropic
import pytest

from planner_ui.providers.anthropic import AnthropicProvider, make_client
from planner_ui.providers.base import (
    ProviderError,
)
from tests.providers.conftest import Pieces, ask, closed_port

from .conftest import DEFAULT_MODELS, LONG_TEXT, MODEL, provider

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
