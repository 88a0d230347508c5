"""Tool modes in routes: "#native", "#prompted", "#auto" after an OpenAI-compatible route."""

from __future__ import annotations

import pytest

from planner_ui.core.routing import Route, RouteError, parse_route, route_for


def test_a_route_without_a_mode_is_native() -> None:
    route = parse_route("openai:qwen2.5-coder:1.5b", "offline")
    assert route == Route("openai", "qwen2.5-coder:1.5b", "native")
    assert route.label == "openai:qwen2.5-coder:1.5b"


@pytest.mark.parametrize("mode", ["prompted", "auto", "native"])
def test_a_mode_is_read_and_kept_in_the_label(mode: str) -> None:
    route = parse_route(f"local:qwen#{mode}", "offline")
    assert route.tool_mode == mode
    assert parse_route(route.label, "offline") == route
    assert route_for({"executor": route.label}, "executor:coder", "offline") == route


def test_an_unknown_mode_says_which_exist() -> None:
    with pytest.raises(RouteError, match="Unknown tool mode 'json'; use one of native, prompted"):
        parse_route("openai:qwen#json", "offline")


def test_a_mode_on_a_provider_without_modes_is_refused() -> None:
    with pytest.raises(RouteError, match="not anthropic"):
        parse_route("anthropic:claude-opus-5-5#prompted", "offline")
