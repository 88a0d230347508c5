"""Routes: how a "provider:model" is read, and which one serves each part of a run."""

from __future__ import annotations

import pytest

from planner_ui.core.routing import (
    OFFLINE_MODEL,
    Route,
    RouteError,
    parse_route,
    resolve_routes,
    role_of,
    route_for,
)

ROLES = ("researcher", "coder")


@pytest.mark.parametrize(
    ("text", "route"),
    [
        ("anthropic:claude-opus-5-5", Route("anthropic", "claude-opus-5-5")),
        ("claude-sonnet-5-5", Route("anthropic", "claude-sonnet-5-5")),
        # Ollama's ids hold colons: only the first one after a provider name separates.
        ("openai:qwen3:8b", Route("openai", "qwen3:8b")),
        # A colon in a bare model id that names no provider keeps the whole id.
        ("llama3.2:1b", Route("anthropic", "llama3.2:1b")),
        ("  openai:llama3.2 ", Route("openai", "llama3.2")),
        ("offline", Route("offline", OFFLINE_MODEL)),
        ("offline:anything", Route("offline", OFFLINE_MODEL)),
    ],
)
def test_parse_route(text: str, route: Route) -> None:
    assert parse_route(text, "anthropic") == route


def test_a_bare_model_of_the_offline_default_is_the_offline_model() -> None:
    assert parse_route("claude-opus-5-5", "offline") == Route("offline", OFFLINE_MODEL)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "A model route is empty"),
        ("anthropic:", "names no model"),
        ("openai:two words", "is not a model id"),
        ("openai:" + "m" * 151, "is not a model id"),
    ],
)
def test_bad_routes_are_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(RouteError, match=message):
        parse_route(text, "anthropic")


def test_an_unknown_default_provider_is_refused() -> None:
    with pytest.raises(RouteError, match="Unknown model provider 'azure'"):
        parse_route("gpt-x", "azure")


CONFIGURED = {
    "planner": "anthropic:claude-opus-5-5",
    "executor": "anthropic:claude-sonnet-5-5",
    "synthesizer": "",
    "executor:coder": "openai:qwen3-coder",
}


def labels(routes: dict[str, Route]) -> dict[str, str]:
    return {part: route.label for part, route in routes.items()}


def test_the_settings_alone_spell_out_every_part() -> None:
    routes = resolve_routes(CONFIGURED, {}, default_provider="anthropic", roles=ROLES)
    assert labels(routes) == {
        "planner": "anthropic:claude-opus-5-5",
        "executor": "anthropic:claude-sonnet-5-5",
        "executor:researcher": "anthropic:claude-sonnet-5-5",
        "executor:coder": "openai:qwen3-coder",
        # No route of its own: the synthesizer follows the executors.
        "synthesizer": "anthropic:claude-sonnet-5-5",
    }


def test_a_persons_choices_win_the_most_specific_first() -> None:
    overrides = {"executor": "claude-haiku-5-5", "executor:researcher": "openai:llama3.2"}
    routes = resolve_routes(CONFIGURED, overrides, default_provider="anthropic", roles=ROLES)
    assert labels(routes) == {
        "planner": "anthropic:claude-opus-5-5",
        "executor": "anthropic:claude-haiku-5-5",
        "executor:researcher": "openai:llama3.2",
        # The person's choice for all executors beats the configured one for a role.
        "executor:coder": "anthropic:claude-haiku-5-5",
        "synthesizer": "anthropic:claude-haiku-5-5",
    }


def test_a_bad_override_names_the_part() -> None:
    with pytest.raises(RouteError, match="coder executors: .*names no model"):
        resolve_routes(
            CONFIGURED, {"executor:coder": "openai:"}, default_provider="anthropic", roles=ROLES
        )


def test_a_part_with_no_route_anywhere_is_refused() -> None:
    with pytest.raises(RouteError, match="No model is configured for the planner"):
        resolve_routes({"executor": "x"}, {}, default_provider="anthropic", roles=ROLES)


def test_route_for_reads_a_stored_table_and_falls_back_to_the_executors() -> None:
    stored = {"planner": "anthropic:claude-opus-5-5", "executor": "openai:llama3.2"}
    assert route_for(stored, "planner", "offline") == Route("anthropic", "claude-opus-5-5")
    # A role added after the run was stored is served by the executors' route.
    assert route_for(stored, "executor:critic", "offline") == Route("openai", "llama3.2")
    with pytest.raises(RouteError, match="no model for 'synthesizer'"):
        route_for(stored, "synthesizer", "offline")


@pytest.mark.parametrize(
    ("purpose", "role"),
    [("planner", "planner"), ("executor:coder", "coder"), ("synthesizer", "synthesizer")],
)
def test_role_of(purpose: str, role: str) -> None:
    assert role_of(purpose) == role
