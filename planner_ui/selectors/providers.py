"""What each model provider needs and has, for the submission form; keys only ever masked."""

from __future__ import annotations

from dataclasses import dataclass

from planner_ui.core.redaction import redact_url
from planner_ui.models import mask_key
from planner_ui.services.providers import credentials

from .local_models import ready_local_routes


@dataclass(frozen=True)
class ProviderStatus:
    name: str
    title: str
    ready: bool
    detail: str


def provider_status(*, staff: bool = False) -> list[ProviderStatus]:
    """Every provider's state; the OpenAI-compatible server's address without the credentials
    it may carry, unless `staff` (who may read them in the admin anyway)."""
    anthropic = credentials("anthropic")
    openai = credentials("openai")
    openai_url = openai.base_url if staff else redact_url(openai.base_url)
    return [
        ProviderStatus("offline", "Offline", True, "built in, deterministic, free"),
        ProviderStatus(
            "anthropic",
            "Anthropic",
            bool(anthropic.api_key),
            f"key {mask_key(anthropic.api_key)} from the {anthropic.source}"
            if anthropic.api_key
            else f"no key: {anthropic.problem}"
            if anthropic.problem
            else "no key: set ANTHROPIC_API_KEY or add one in the admin",
        ),
        ProviderStatus(
            "openai",
            "OpenAI-compatible",
            bool(openai.base_url),
            f"{openai_url} (from the {openai.source})"
            if openai.base_url
            else "no server: set OPENAI_BASE_URL, e.g. http://localhost:11434/v1 for Ollama",
        ),
        _local_status(),
    ]


def _local_status() -> ProviderStatus:
    ready = ready_local_routes()
    return ProviderStatus(
        "local",
        "Local",
        bool(ready),
        "ready: " + ", ".join(ready)
        if ready
        else "none running: an administrator starts a GGUF model here, or AGENTSITE_LOCAL_MODEL",
    )
