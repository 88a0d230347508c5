"""Build a provider for one route, from what a service hands in: nothing here reads settings.

Vendor modules are imported lazily, so a machine without a key never loads them.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from planner_ui.core.errors import ProviderError
from planner_ui.core.redaction import redact_url
from planner_ui.core.routing import Route

from .base import Provider

__all__ = ["Connection", "Provider", "build_provider", "is_local_url"]


@dataclass(frozen=True)
class Connection:
    """How to reach a vendor's API; services.providers fills it from the admin and settings."""

    api_key: str = ""
    base_url: str = ""
    timeout_s: float = 120.0
    max_retries: int = 3


def is_local_url(url: str) -> bool:
    """Whether `url` points at this machine (a local test server, a model server on loopback)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def preload() -> None:
    """Import every provider now. A prefork worker calls this before it forks its processes,
    which then share the modules instead of each importing them on its first step (the SDKs
    take a good part of a second each)."""
    from . import anthropic, offline, openai_compat, scripted  # noqa: F401


def build_provider(
    route: Route,
    connection: Connection = Connection(),
    *,
    offline_latency_s: float = 0.0,
    allow_model_requests: bool = True,
) -> Provider:
    """A ready provider for one route; ProviderError says what is missing if it cannot be.

    With `allow_model_requests` off (as in every test), only the offline provider and servers
    on this machine may be used: a set API key can never turn a test into a paid call.
    """
    if route.provider == "offline":
        from .offline import OfflineProvider

        return OfflineProvider(route.model, latency_s=offline_latency_s)
    if route.provider == "scripted":
        from .scripted import ScriptedProvider

        return ScriptedProvider(route.model)
    if route.provider == "anthropic":
        from .anthropic import AnthropicProvider
        from .anthropic import make_client as anthropic_client

        client = anthropic_client(
            api_key=connection.api_key,
            base_url=connection.base_url or None,
            timeout=connection.timeout_s,
            max_retries=connection.max_retries,
        )
        _refuse_remote(route, connection, allow_model_requests)
        return AnthropicProvider(route.model, client)
    if route.provider in ("openai", "local"):  # a local model speaks OpenAI's protocol
        from .openai_compat import OpenAICompatProvider
        from .openai_compat import make_client as openai_client

        compat_client = openai_client(
            api_key=connection.api_key,
            base_url=connection.base_url,
            timeout=connection.timeout_s,
            max_retries=connection.max_retries,
        )
        _refuse_remote(route, connection, allow_model_requests)
        return OpenAICompatProvider(
            route.model, compat_client, name=route.provider, tool_mode=route.tool_mode
        )
    raise ProviderError(f"Unknown model provider {route.provider!r}.")


def _refuse_remote(route: Route, connection: Connection, allow_model_requests: bool) -> None:
    # After the client is made, so a missing key is still reported as such; before any call.
    if not allow_model_requests and not is_local_url(connection.base_url):
        where = redact_url(connection.base_url) or f"{route.provider}'s own API"
        raise ProviderError(
            f"Model requests are switched off here (AGENTSITE_ALLOW_MODEL_REQUESTS=false, as in "
            f"every test), so {route.label} may not reach {where}: use the offline provider or "
            "a model server on this machine."
        )
