"""Which provider serves which part, from a run's routes and the settings.

Vendor modules are imported lazily, so a machine without a key never loads them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings

from planner_ui.core.errors import ProviderError
from planner_ui.core.plan import ROLES
from planner_ui.core.routing import Route, RouteError, resolve_routes, route_for

from .base import Provider


@dataclass(frozen=True)
class Credentials:
    api_key: str
    base_url: str
    # Where they came from, for the page that shows it: "admin", "environment" or "".
    source: str


def configured_routes() -> dict[str, str]:
    """The routes the settings name; empty values fall through to the next in line."""
    routes = {
        "planner": settings.AGENTSITE_PLANNER_MODEL,
        "executor": settings.AGENTSITE_EXECUTOR_MODEL,
        "synthesizer": settings.AGENTSITE_SYNTHESIZER_MODEL,
    }
    for role, route in settings.AGENTSITE_ROLE_MODELS.items():
        routes[f"executor:{role}"] = route
    return routes


def routes_for_run(
    overrides: Mapping[str, str] | None = None, *, check: bool = True
) -> dict[str, Route]:
    """The full routing table of a new run: the settings, with the person's choices on top.

    Raises RouteError when a route cannot be read or (with `check`) its provider is not set
    up here.
    """
    routes = resolve_routes(
        configured_routes(),
        overrides or {},
        default_provider=settings.AGENTSITE_PROVIDER,
        roles=ROLES,
    )
    if check:
        for route in set(routes.values()):
            check_available(route)
    return routes


def credentials(provider: str) -> Credentials:
    """An admin's stored credentials win over the environment's."""
    from planner_ui.models import ProviderCredential

    stored = ProviderCredential.objects.filter(provider=provider).first()
    env_key, env_url = {
        "anthropic": (settings.ANTHROPIC_API_KEY, settings.ANTHROPIC_BASE_URL),
        "openai": (settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL),
    }.get(provider, ("", ""))
    if stored is not None and (stored.api_key or stored.base_url):
        return Credentials(stored.api_key or env_key, stored.base_url or env_url, "admin")
    return Credentials(env_key, env_url, "environment" if env_key or env_url else "")


def check_available(route: Route) -> None:
    """Refuse a route this installation cannot serve, saying what to configure."""
    if route.provider == "anthropic" and not credentials("anthropic").api_key:
        raise RouteError(
            f"{route.label} needs an Anthropic API key: set ANTHROPIC_API_KEY or add one in "
            "the admin (Provider credentials)."
        )
    if route.provider == "openai" and not credentials("openai").base_url:
        raise RouteError(
            f"{route.label} needs an OpenAI-compatible server: set OPENAI_BASE_URL (e.g. "
            "http://localhost:11434/v1 for Ollama) or add it in the admin."
        )


def build_provider(route: Route) -> Provider:
    """A ready provider for one route; ProviderError says what is missing if it cannot be."""
    if route.provider == "offline":
        from .offline import OfflineProvider

        latency = float(os.environ.get("AGENTSITE_OFFLINE_LATENCY_S", "0") or 0)
        return OfflineProvider(route.model, latency_s=latency)
    if route.provider == "anthropic":
        from .anthropic import AnthropicProvider, make_client

        creds = credentials("anthropic")
        client = make_client(
            api_key=creds.api_key,
            base_url=creds.base_url or None,
            timeout=settings.AGENTSITE_MODEL_TIMEOUT_S,
            max_retries=settings.AGENTSITE_MODEL_MAX_RETRIES,
        )
        return AnthropicProvider(route.model, client)
    if route.provider == "openai":
        from .openai_compat import OpenAICompatProvider, make_client

        creds = credentials("openai")
        client = make_client(
            api_key=creds.api_key,
            base_url=creds.base_url,
            timeout=settings.AGENTSITE_MODEL_TIMEOUT_S,
            max_retries=settings.AGENTSITE_MODEL_MAX_RETRIES,
        )
        return OpenAICompatProvider(route.model, client)
    raise ProviderError(f"Unknown model provider {route.provider!r}.")


def provider_for(purpose: str, routes: Mapping[str, str] | None = None) -> Provider:
    """The provider for 'planner', 'executor:<role>' or 'synthesizer' under a run's routes.

    A run from before routes were stored (an empty table) uses the settings' routes.
    """
    try:
        if not routes:
            routes = {part: route.label for part, route in routes_for_run(check=False).items()}
        route = route_for(routes, purpose, settings.AGENTSITE_PROVIDER)
    except RouteError as exc:
        raise ProviderError(str(exc)) from exc
    return build_provider(route)


@dataclass(frozen=True)
class ProviderStatus:
    name: str
    title: str
    ready: bool
    detail: str


def provider_status() -> list[ProviderStatus]:
    """What each provider needs and has, for the submission form; keys only ever masked."""
    from planner_ui.models import mask_key

    anthropic = credentials("anthropic")
    openai = credentials("openai")
    return [
        ProviderStatus("offline", "Offline", True, "built in, deterministic, free"),
        ProviderStatus(
            "anthropic",
            "Anthropic",
            bool(anthropic.api_key),
            f"key {mask_key(anthropic.api_key)} from the {anthropic.source}"
            if anthropic.api_key
            else "no key: set ANTHROPIC_API_KEY or add one in the admin",
        ),
        ProviderStatus(
            "openai",
            "OpenAI-compatible",
            bool(openai.base_url),
            f"{openai.base_url} (from the {openai.source})"
            if openai.base_url
            else "no server: set OPENAI_BASE_URL, e.g. http://localhost:11434/v1 for Ollama",
        ),
    ]
