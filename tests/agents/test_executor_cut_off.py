"""run_step when a reply runs into its max_tokens inside a tool call's arguments: the real
OpenAI SDK against the fake server, answering as llama.cpp does (HTTP 500) and as OpenAI, vLLM
and Ollama do (a stream finished for "length")."""

from __future__ import annotations

from typing import Any

import pytest

from planner_ui.agents.executor import StepSpec, run_step
from planner_ui.core.errors import StepFailed
from planner_ui.providers.openai_compat import OpenAICompatProvider, make_client
from planner_ui.tools import ToolContext
from tests.fakes.openai_server import FakeOpenAI

# Written at one token per 4 characters (see enqueue_long_tool_call): about 5,000 tokens, more
# than a request's default 4096 and less than twice that.
FITS_TWICE_THE_ROOM = {"path": "poem.txt", "content": "In the annals of time. " * 870}
TOO_LONG_EVEN_THEN = {"path": "poem.txt", "content": "In the annals of time. " * 1500}
SERVERS = ["llamacpp", "stream"]


@pytest.fixture
def server():
    with FakeOpenAI(api_key=None) as fake:  # a local server takes any key
        yield fake


def run(server: FakeOpenAI, tool_ctx: ToolContext) -> Any:
    provider = OpenAICompatProvider("local", make_client(api_key="", base_url=server.base_url))
    spec = StepSpec("poem", "Poem", "Write a long poem to poem.txt.", "writer", ["write_file"])
    return run_step(provider, spec, [], tool_ctx, lambda kind, payload: None)


@pytest.mark.parametrize("answers_as", SERVERS)
def test_a_cut_off_tool_call_is_asked_again_with_twice_the_room(
    server: FakeOpenAI, tool_ctx: ToolContext, answers_as: str
) -> None:
    server.enqueue_long_tool_call("write_file", FITS_TWICE_THE_ROOM, server=answers_as)
    server.enqueue_long_tool_call("write_file", FITS_TWICE_THE_ROOM, server=answers_as)
    server.enqueue_text("Wrote poem.txt.")

    outcome = run(server, tool_ctx)

    assert outcome.output == "Wrote poem.txt."
    assert (tool_ctx.workspace / "poem.txt").read_text() == FITS_TWICE_THE_ROOM["content"]
    assert [r.body["max_tokens"] for r in server.requests] == [4096, 8192, 4096]
    assert (outcome.model_calls, outcome.tool_calls) == (3, 1)


@pytest.mark.parametrize("answers_as", SERVERS)
def test_a_call_too_long_for_twice_the_room_fails_the_step_saying_why(
    server: FakeOpenAI, tool_ctx: ToolContext, answers_as: str
) -> None:
    server.enqueue_long_tool_call("write_file", TOO_LONG_EVEN_THEN, server=answers_as)
    server.enqueue_long_tool_call("write_file", TOO_LONG_EVEN_THEN, server=answers_as)

    with pytest.raises(StepFailed) as failed:
        run(server, tool_ctx)

    message = str(failed.value)
    assert message.startswith(
        "the model's tool call did not fit in its reply, with 4096 tokens nor with 8192: "
    )
    assert message.endswith("Ask for less in one call (a long file can be written in parts).")
    if answers_as == "llamacpp":
        assert "Failed to parse tool call arguments as JSON" in message
    else:
        assert (
            "the arguments of its call to write_file were cut off at the reply's limit of "
            "8192 tokens" in message
        )
    assert len(server.requests) == 2  # no SDK retries on top
    assert not (tool_ctx.workspace / "poem.txt").exists()
