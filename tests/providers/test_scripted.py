"""The scripted provider: exactly the replies a test queued, in order, and a clear error when
it runs out; runs route to it by the script's name."""

from __future__ import annotations

import json

import pytest

from planner_ui.core.errors import ProviderError
from planner_ui.core.messages import ModelRequest, Usage
from planner_ui.core.routing import Route
from planner_ui.providers import build_provider
from planner_ui.providers.scripted import ScriptedProvider, script

REQUEST = ModelRequest(system="s", messages=[{"role": "user", "content": "hi"}], purpose="planner")


def test_replies_come_in_the_order_they_were_queued() -> None:
    queued = script("order").plan({"goal": "g", "steps": []}).tool_call("calculator", {"x": 1})
    queued.text("done", usage=Usage(7, 3))
    provider = ScriptedProvider("order")

    first, second, third = (provider.complete(REQUEST) for _ in range(3))

    assert json.loads(first.text) == {"goal": "g", "steps": []}
    assert [(c.name, c.arguments) for c in second.tool_calls] == [("calculator", {"x": 1})]
    assert second.stop_reason == "tool_use" and second.tool_calls[0].id == "call-1"
    assert (third.text, third.usage, third.stop_reason) == ("done", Usage(7, 3), "end_turn")
    assert queued.requests == [REQUEST, REQUEST, REQUEST]


def test_the_text_reaches_a_listener_as_a_streaming_model_would_send_it() -> None:
    script("stream").text("Tea has less caffeine.")
    pieces: list[str] = []
    ScriptedProvider("stream").complete(REQUEST, on_text=pieces.append)
    assert "".join(pieces) == "Tea has less caffeine."


def test_an_empty_script_says_who_asked_and_what_to_do() -> None:
    script("short").text("only one")
    provider = ScriptedProvider("short")
    provider.complete(REQUEST)
    with pytest.raises(ProviderError) as exc:
        provider.complete(REQUEST)
    assert str(exc.value) == (
        "The script 'short' has no reply left for the planner (request 2): queue one more."
    )


def test_an_unknown_script_is_refused_with_the_way_to_make_one() -> None:
    with pytest.raises(ProviderError, match=r"No script named 'nowhere': queue its replies"):
        build_provider(Route("scripted", "nowhere"))


def test_a_route_builds_the_named_script() -> None:
    named = script("routed")
    provider = build_provider(Route("scripted", "routed"), allow_model_requests=False)
    assert isinstance(provider, ScriptedProvider) and provider.script is named
    assert provider.label == "scripted:routed"
