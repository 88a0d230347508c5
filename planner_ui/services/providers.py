"""Which model serves which part of a run: routes from the settings and the person's choices,
credentials from the admin or the environment, and the metered provider a part calls."""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings

from planner_ui.core.errors import ProviderError
from planner_ui.core.routing import Route, RouteError
from planner_ui.models import Run
from planner_ui.providers import Connection, Provider, build_provider
from planner_ui.providers.metered import MeteredProvider
from planner_ui.selectors.providers import Credentials, credentials
from planner_ui.selectors.routes import route_of, routes_resolved, switched_routes

from .accounting import metered
from .event_buffer import EventBuffer
from .local_models import LocalModelRefused, local_model_url


def routes_for_run(
    overrides: Mapping[str, str] | None = None, *, check: bool = True
) -> dict[str, Route]:
    """The full routing table of a new run: the settings, with the person's choices on top.

    Raises RouteError when a route cannot be read or (with `check`) its provider is not set
    up here.
    """
    routes = routes_resolved(overrides)
    if check:
        for route in set(routes.values()):
            check_available(route)
    return routes


def check_available(route: Route) -> None:
    """Refuse a route this installation cannot serve, saying what to configure."""
    if route.provider == "scripted" and settings.AGENTSITE_ALLOW_MODEL_REQUESTS:
        raise RouteError(
            f"{route.label}: scripted models reply from a test's queue and serve only where "
            "real model requests are off (AGENTSITE_ALLOW_MODEL_REQUESTS=false, as in tests)."
        )
    if route.provider == "anthropic" and not (creds := credentials("anthropic")).api_key:
        if creds.problem:
            raise RouteError(f"{route.label} needs an Anthropic API key, and {creds.problem}.")
        raise RouteError(
            f"{route.label} needs an Anthropic API key: set ANTHROPIC_API_KEY or add one in "
            "the admin (Provider credentials)."
        )
    if route.provider == "local":
        try:
            local_model_url(route.model)
        except LocalModelRefused as exc:
            raise RouteError(str(exc)) from exc
    if route.provider == "openai" and not credentials("openai").base_url:
        raise RouteError(
            f"{route.label} needs an OpenAI-compatible server: set OPENAI_BASE_URL (e.g. "
            "http://localhost:11434/v1 for Ollama) or add it in the admin."
        )


def provider_build(route: Route) -> Provider:
    """A ready provider for one route, with this installation's credentials and limits."""
    creds: Credentials | None
    if route.provider == "local":
        try:
            creds = Credentials("local", local_model_url(route.model), "local")
        except LocalModelRefused as exc:
            raise ProviderError(str(exc)) from exc
    else:
        creds = credentials(route.provider) if route.provider != "offline" else None
    connection = Connection(
        api_key=creds.api_key if creds else "",
        base_url=creds.base_url if creds else "",
        timeout_s=settings.AGENTSITE_MODEL_TIMEOUT_S,
        max_retries=settings.AGENTSITE_MODEL_MAX_RETRIES,
    )
    return build_provider(
        route,
        connection,
        offline_latency_s=settings.AGENTSITE_OFFLINE_LATENCY_S,
        allow_model_requests=settings.AGENTSITE_ALLOW_MODEL_REQUESTS,
    )


def provider_for(purpose: str, routes: Mapping[str, str] | None = None) -> Provider:
    """The provider for a part of a run under its routes (see route_of)."""
    return provider_build(route_of(purpose, routes))


def run_provider(
    run: Run, purpose: str, step_id: str = "", *, events: EventBuffer | None = None
) -> MeteredProvider:
    """The provider a part of `run` calls, gated by the run's budget and every call recorded;
    a step's calls hold their events in the step's buffer, `events` (accounting.call_record).

    A route in "auto" tool mode that switched to prompting in an earlier step of the run starts
    switched (the question is asked only of such routes, not on every step)."""
    route = route_of(purpose, run.routes)
    provider = provider_build(route)
    if route.tool_mode == "auto" and route.label in switched_routes(run):
        provider.carry_tool_mode("prompted")
    return metered(run, step_id, provider, events=events)
