"""Building a provider for a route, and the switch that keeps tests off real model servers."""

from __future__ import annotations

import pytest

from planner_ui.core.errors import ProviderError
from planner_ui.core.routing import Route
from planner_ui.providers import Connection, build_provider, is_local_url
from planner_ui.providers.anthropic import AnthropicProvider
from planner_ui.providers.offline import OfflineProvider
from planner_ui.providers.openai_compat import OpenAICompatProvider


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://[::1]:9000", True),
        ("http://127.5.0.1", True),
        ("https://api.anthropic.com", False),
        ("http://10.0.0.5:8000/v1", False),
        ("http://localhost.example.com", False),
        ("", False),
    ],
)
def test_is_local_url(url: str, local: bool) -> None:
    assert is_local_url(url) is local


def test_the_offline_provider_is_built_even_with_requests_switched_off() -> None:
    provider = build_provider(Route("offline", "offline-v1"), allow_model_requests=False)
    assert isinstance(provider, OfflineProvider)


@pytest.mark.parametrize("base_url", ["", "https://api.anthropic.com"])
def test_with_requests_switched_off_a_key_cannot_reach_anthropic(base_url: str) -> None:
    where = base_url or "anthropic's own API"
    with pytest.raises(ProviderError) as exc:
        build_provider(
            Route("anthropic", "claude-sonnet-5-5"),
            Connection(api_key="sk-ant-real-looking-key", base_url=base_url),
            allow_model_requests=False,
        )
    assert str(exc.value) == (
        "Model requests are switched off here (AGENTSITE_ALLOW_MODEL_REQUESTS=false, as in "
        f"every test), so anthropic:claude-sonnet-5-5 may not reach {where}: use the offline "
        "provider or a model server on this machine."
    )


def test_with_requests_switched_off_a_remote_openai_server_is_refused() -> None:
    with pytest.raises(ProviderError, match="may not reach http://10.1.2.3:8000/v1"):
        build_provider(
            Route("openai", "llama3.2"),
            Connection(base_url="http://10.1.2.3:8000/v1"),
            allow_model_requests=False,
        )


def test_with_requests_switched_off_servers_on_this_machine_are_allowed() -> None:
    anthropic = build_provider(
        Route("anthropic", "claude-sonnet-5-5"),
        Connection(api_key="test", base_url="http://127.0.0.1:9"),
        allow_model_requests=False,
    )
    openai = build_provider(
        Route("openai", "llama3.2"),
        Connection(base_url="http://localhost:9/v1"),
        allow_model_requests=False,
    )
    assert isinstance(anthropic, AnthropicProvider)
    assert isinstance(openai, OpenAICompatProvider)


def test_a_missing_key_is_reported_as_such_before_the_switch() -> None:
    with pytest.raises(ProviderError, match="No Anthropic API key"):
        build_provider(Route("anthropic", "claude-sonnet-5-5"), allow_model_requests=False)


def test_with_requests_allowed_a_remote_endpoint_is_built() -> None:
    provider = build_provider(
        Route("anthropic", "claude-sonnet-5-5"),
        Connection(api_key="sk-ant-test", base_url="https://api.anthropic.com"),
        allow_model_requests=True,
    )
    assert isinstance(provider, AnthropicProvider)


def test_the_test_settings_switch_requests_off(settings) -> None:
    assert settings.AGENTSITE_ALLOW_MODEL_REQUESTS is False
    assert settings.AGENTSITE_PROVIDER == "offline"
