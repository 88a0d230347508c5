"""Making the OpenAI-compatible client, and one whole executor step through it."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from planner_ui.agents.executor import StepSpec, run_step
from planner_ui.providers.base import (
    ProviderError,
    Usage,
)
from planner_ui.providers.openai_compat import make_client
from planner_ui.tools import ToolContext
from tests.fakes.openai_server import FakeOpenAI
from tests.providers.conftest import ask

from .conftest import provider

# --- the client --------------------------------------------------------------------------------


def test_an_empty_key_sends_a_placeholder_local_servers_ignore():
    with FakeOpenAI(api_key=None) as server:
        server.enqueue_text("ok")
        assert provider(server, key="").complete(ask()).text == "ok"
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


def test_make_client_without_a_base_url_says_what_to_set():
    with pytest.raises(ProviderError) as exc:
        make_client(api_key="k", base_url="")
    assert str(exc.value) == (
        "No OpenAI-compatible server configured: set OPENAI_BASE_URL (e.g. "
        "http://localhost:11434/v1 for Ollama, https://api.openai.com/v1 for OpenAI) or add it "
        "in the admin."
    )


def test_make_client_uses_the_given_base_url_not_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://elsewhere.invalid/v1")
    client = make_client(api_key="k", base_url="http://127.0.0.1:1/v1", timeout=3, max_retries=1)
    assert isinstance(client, openai.OpenAI)
    assert (str(client.base_url), client.timeout, client.max_retries) == (
        "http://127.0.0.1:1/v1/",
        3,
        1,
    )


# --- a whole executor step ---------------------------------------------------------------------


def test_an_executor_step_with_the_calculator(server, tmp_path: Path):
    (call_id,) = server.enqueue_tool_calls(
        [("calculator", {"expression": "6 * 7"})], text="Let me compute."
    )
    server.enqueue_text("6 * 7 = 42", prompt_tokens=150, completion_tokens=6)
    spec = StepSpec(
        id="compute",
        title="Compute",
        instruction="Compute 6 * 7.",
        role="coder",
        tools=["calculator"],
    )
    events: list[tuple[str, dict]] = []

    outcome = run_step(
        provider(server),
        spec,
        [],
        ToolContext(run_id=1, step_id="compute", workspace=tmp_path / "workspace"),
        lambda kind, payload: events.append((kind, payload)),
    )

    assert outcome.output == "6 * 7 = 42"
    assert (outcome.model_calls, outcome.tool_calls) == (2, 1)
    assert server.pending == 0
    assert outcome.usage == Usage(160, 11)
    result = {"call_id": call_id, "tool": "calculator", "content": "6 * 7 = 42", "is_error": False}
    assert ("step.tool_result", result) in events
    second = server.requests[1].body
    assert second["tools"][0]["function"]["name"] == "calculator"
    assert second["messages"][-2:] == [
        {
            "role": "assistant",
            "content": "Let me compute.",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "calculator", "arguments": '{"expression": "6 * 7"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "6 * 7 = 42"},
    ]
