"""The OpenAI-compatible provider's tests: the fake server and the provider pointed at it."""

from __future__ import annotations

import pytest

from planner_ui.providers.openai_compat import OpenAICompatProvider, make_client
from tests.fakes.openai_server import FakeOpenAI

MODEL = "qwen3:8b"


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def provider(
    server: FakeOpenAI,
    *,
    key: str = "test-key",
    retries: int = 0,
    timeout: float = 5,
    model: str = MODEL,
) -> OpenAICompatProvider:
    client = make_client(
        api_key=key, base_url=server.base_url, timeout=timeout, max_retries=retries
    )
    return OpenAICompatProvider(model, client)
