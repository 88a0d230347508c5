"""The Anthropic provider's errors: keys, retries, rate limits, bad requests, context overflow."""

from __future__ import annotations

import json

import pytest

from planner_ui.providers.base import (
    ProviderError,
)
from tests.providers.conftest import Pieces, ask

from .conftest import provider

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
