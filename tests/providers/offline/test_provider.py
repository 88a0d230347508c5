"""The offline provider itself: deterministic replies, usage, names, latency."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from planner_ui.core.messages import input_tokens_estimate
from planner_ui.providers.base import ModelRequest
from planner_ui.providers.offline import OfflineProvider
from planner_ui.providers.offline import provider as provider_module

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


def test_an_answer_stops_at_max_tokens_as_a_vendors_does() -> None:
    request = executor_request("Calculate 2+2.", ["calculator"], role="coder")
    first = PROVIDER.complete(request)
    answering = after_results(request, first, run_tools(first, {"calculator": ("2+2 = 4", False)}))
    whole = PROVIDER.complete(answering)
    assert whole.stop_reason == "end_turn" and whole.usage.output_tokens > 4

    cut = PROVIDER.complete(dataclasses.replace(answering, max_tokens=4))

    assert (cut.stop_reason, cut.text, cut.usage.output_tokens) == (
        "max_tokens",
        whole.text[:16],
        4,
    )
    # A tool call cut off is no call at all.
    calling = PROVIDER.complete(dataclasses.replace(request, max_tokens=1))
    assert (calling.stop_reason, calling.tool_calls) == ("max_tokens", [])


def test_it_knows_what_a_request_will_count_as_input_before_sending_it() -> None:
    for request in (
        planner_request("Compare PostgreSQL and MySQL"),
        executor_request("Calculate 12*(3+4).", ["calculator"]),
    ):
        assert PROVIDER.input_tokens(request) == PROVIDER.complete(request).usage.input_tokens
        # The estimate for vendors' requests errs on the high side of it.
        assert input_tokens_estimate(request) >= PROVIDER.input_tokens(request)


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


class _Clock:
    """Time that passes only when slept or spent: the schedule, without a timed test."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _stream(monkeypatch, listener_s: float) -> tuple[_Clock, list[float]]:
    """Stream a reply with 0.2 s of latency to a listener that spends `listener_s` on a piece."""
    clock = _Clock()
    monkeypatch.setattr(provider_module, "time", clock)
    arrivals: list[float] = []

    def listener(piece: str) -> None:
        arrivals.append(clock.now)
        clock.now += listener_s

    request = executor_request("Research Rust.", [])
    reply = OfflineProvider(latency_s=0.2).complete(request, listener)
    assert reply.text and len(arrivals) > 1
    return clock, arrivals


def test_streamed_pieces_come_on_the_models_schedule(monkeypatch) -> None:
    clock, arrivals = _stream(monkeypatch, 0.0)
    pieces = len(arrivals)
    assert arrivals == pytest.approx([0.2 * n / pieces for n in range(1, pieces + 1)])
    assert clock.now == pytest.approx(0.2)


def test_a_listener_quicker_than_the_model_overlaps_its_waits(monkeypatch) -> None:
    """What a listener spends on a piece overlaps the wait for the next, as with a model that
    streams at its own pace: only the last piece's work adds to the call."""
    clock, arrivals = _stream(monkeypatch, 0.01)
    pieces = len(arrivals)
    assert 0.2 / pieces > 0.01
    assert arrivals == pytest.approx([0.2 * n / pieces for n in range(1, pieces + 1)])
    assert clock.now == pytest.approx(0.21)


def test_a_listener_slower_than_the_model_makes_the_call_late_by_its_own_work(monkeypatch) -> None:
    clock, arrivals = _stream(monkeypatch, 0.05)
    pieces = len(arrivals)
    # The first piece is waited for; the rest are ready by the time the listener asks.
    assert clock.slept == pytest.approx([0.2 / pieces])
    assert clock.now == pytest.approx(0.2 / pieces + pieces * 0.05)
