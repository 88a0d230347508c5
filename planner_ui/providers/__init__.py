"""Which provider serves which part, from settings. Vendor modules are imported lazily."""

from __future__ import annotations

import os

from django.conf import settings

from .base import Provider


def provider_for(purpose: str) -> Provider:
    """The provider for 'planner', 'executor:<role>' or 'synthesizer'."""
    kind = settings.AGENTSITE_PROVIDER
    if kind == "offline":
        from .offline import OfflineProvider

        latency = float(os.environ.get("AGENTSITE_OFFLINE_LATENCY_S", "0") or 0)
        return OfflineProvider(latency_s=latency)
    if kind == "anthropic":
        from .anthropic import AnthropicProvider, make_client

        client = make_client(
            api_key=settings.ANTHROPIC_API_KEY,
            base_url=settings.ANTHROPIC_BASE_URL or None,
            timeout=settings.AGENTSITE_MODEL_TIMEOUT_S,
        )
        model = (
            settings.AGENTSITE_PLANNER_MODEL
            if purpose == "planner"
            else settings.AGENTSITE_EXECUTOR_MODEL
        )
        return AnthropicProvider(model, client)
    raise ValueError(f"unknown AGENTSITE_PROVIDER {kind!r}; use 'offline' or 'anthropic'")
