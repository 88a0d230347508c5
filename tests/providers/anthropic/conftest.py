"""The Anthropic provider's tests: the fake server (every request must stream) and the provider
pointed at it."""

from __future__ import annotations

import pytest

from planner_ui.providers.anthropic import AnthropicProvider, make_client
from tests.fakes.anthropic_server import FakeAnthropic

MODEL = "claude-sonnet-5-5"
LONG_TEXT = "A reply long enough to arrive in several pieces, as a real stream would deliver it."
# The ids agentsite/settings.py defaults to for the planner and the executors.
DEFAULT_MODELS = ["claude-opus-5-5", "claude-sonnet-5-5"]


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
