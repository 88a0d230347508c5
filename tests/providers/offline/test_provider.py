"""The offline provider itself: deterministic replies, usage, names, latency."""

from __future__ import annotations

import json
import time

import pytest

from planner_ui.providers.base import ModelRequest
from planner_ui.providers.offline import OfflineProvider

from .requests import (
    PROVIDER,
    after_results,
    executor_request,
    planner_request,
    run_tools,
    synthesizer_request,
)

# --- the provider ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "request_",
    [
        planner_request("Compare PostgreSQL and MySQL"),
        executor_request("Calculate 12*(3+4).", ["calculator"]),
        synthesizer_request("Say hi", [("a", "A", "hi")]),
    ],
)
def test_the_same_request_gets_the_same_reply(request_: ModelRequest) -> None:
    assert OfflineProvider().complete(request_) == OfflineProvider().complete(request_)


def test_usage_is_a_character_estimate_of_input_and_output() -> None:
    request = executor_request("Calculate 2+2.", ["calculator"], role="coder")

    reply = PROVIDER.complete(request)

    input_chars = len(request.system) + len(request.messages[0]["content"])
    output_chars = len(reply.text) + len(json.dumps({"expression": "2+2"}))
    assert reply.usage.input_tokens == -(-input_chars // 4)
    assert reply.usage.output_tokens == -(-output_chars // 4)
    assert reply.model == "offline-v1"


def test_tool_results_count_as_input() -> None:
    request = executor_request("Calculate 2+2.", ["calculator"], role="coder")
    first = PROVIDER.complete(request)
    short = after_results(request, first, run_tools(first, {"calculator": ("2+2 = 4", False)}))
    long = after_results(
        request, first, run_tools(first, {"calculator": ("2+2 = 4" + " " * 400, False)})
    )

    assert (
        PROVIDER.complete(long).usage.input_tokens
        == PROVIDER.complete(short).usage.input_tokens + 100
    )


def test_names_and_model() -> None:
    provider = OfflineProvider(model="offline-test")

    assert provider.label == "offline:offline-test"
    assert OfflineProvider().model == "offline-v1"


def test_latency_makes_each_call_take_at_least_that_long() -> None:
    provider = OfflineProvider(latency_s=0.2)
    request = executor_request("Research Rust.", [])

    started = time.monotonic()
    provider.complete(request)
    elapsed = time.monotonic() - started

    assert elapsed >= 0.2
