"""What each model provider needs and has, for the submission form; keys only ever masked
there. `credentials` is the one read of a provider's key, for the service that builds it too."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from planner_ui.core.redaction import redact_url
from planner_ui.core.sealing import Unreadable
from planner_ui.models import ProviderCredential, mask_key

from .local_models import ready_local_routes


@dataclass(frozen=True)
class Credentials:
    api_key: str
    base_url: str
    # Where they came from, for the page that shows it: "admin", "environment" or "".
    source: str
    # Why a key the admin stored cannot be used (the secret key changed since), or "".
    problem: str = ""


def credentials(provider: str) -> Credentials:
    """An admin's stored credentials win over the environment's."""
    stored = ProviderCredential.objects.filter(provider=provider).first()
    env_key, env_url = {
        "anthropic": (settings.ANTHROPIC_API_KEY, settings.ANTHROPIC_BASE_URL),
        "openai": (settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL),
    }.get(provider, ("", ""))
    if stored is not None and (stored.api_key or stored.base_url):
        try:
            key = stored.key()
        except Unreadable as exc:
            return Credentials("", stored.base_url or env_url, "admin", problem=str(exc))
        return Credentials(key or env_key, stored.base_url or env_url, "admin")
    return Credentials(env_key, env_url, "environment" if env_key or env_url else "")


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
