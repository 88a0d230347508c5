"""An admin's OpenAI base URL with credentials in it (`http://user:pass@host/v1?api_key=...`)
is shown to every user on the submission form: the credentials are hidden from anyone who is
not staff, and from the errors a failed model call leaves on a person's run."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from planner_ui.core.redaction import redact_url
from planner_ui.models import ProviderCredential
from planner_ui.providers.base import ProviderError
from planner_ui.providers.openai_compat import OpenAICompatProvider, make_client
from tests.fakes.openai_server import FakeOpenAI
from tests.providers.conftest import ask

SECRET_URL = "http://admin-user:hunter2-pass@models.example:8080/v1?api_key=sk-live-123&v=2"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://localhost:11434/v1", "http://localhost:11434/v1"),
        ("http://user:pass@host/v1", "http://***@host/v1"),
        ("https://token@host:8443/v1", "https://***@host:8443/v1"),
        ("http://host/v1?api_key=sk-1&model=x", "http://host/v1?api_key=***&model=x"),
        ("http://host/v1?model=x&v=2", "http://host/v1?model=x&v=2"),
        (
            "http://h/v1?access_token=a&X-Auth=b&sig=c&client_secret=d&password=e",
            "http://h/v1?access_token=***&X-Auth=***&sig=***&client_secret=***&password=***",
        ),
        (SECRET_URL, "http://***@models.example:8080/v1?api_key=***&v=2"),
        # urlsplit refuses these; the credentials go all the same.
        ("http://u:p@[::1/v1?key=k", "http://***@[::1/v1?***"),
        ("", ""),
        # REDIS_URL, printed by the launcher.
        ("redis://:pw@host:6379/0", "redis://***@host:6379/0"),
        ("unix:///srv/var/redis.sock", "unix:///srv/var/redis.sock"),
        (
            "unix:///srv/var/redis.sock?password=pw&db=1",
            "unix:///srv/var/redis.sock?password=***&db=1",
        ),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.fixture
def secret_base_url(db):
    ProviderCredential.objects.create(provider="openai", base_url=SECRET_URL)


def _providers(client: Client) -> str:
    page = client.get(reverse("home")).content.decode()
    start = page.index('id="providers"')
    return page[start : page.index("</ul>", start)]


def test_a_user_who_is_not_staff_sees_the_server_without_its_credentials(
    client_alice, secret_base_url
):
    providers = _providers(client_alice)
    assert "models.example:8080/v1" in providers
    for secret in ("admin-user", "hunter2-pass", "sk-live-123"):
        assert secret not in providers
    assert "http://***@models.example:8080/v1?api_key=***&amp;v=2" in providers


def test_staff_see_the_address_they_configured(make_user, secret_base_url):
    admin = make_user("root")
    admin.is_staff = True
    admin.save()
    client = Client()
    client.force_login(admin)
    assert "hunter2-pass" in _providers(client)


def test_a_failed_model_call_names_the_server_without_its_credentials():
    """The error lands on the run's step, which its owner reads: a real SDK call to a real
    local server whose address carries a user and a password. (A query in a base URL the SDK
    mangles: it appends the path after it.)"""
    with FakeOpenAI() as server:
        with_secrets = server.base_url.replace("http://", "http://admin-user:hunter2-pass@")
        client = make_client(api_key="test-key", base_url=with_secrets, max_retries=0)
        with pytest.raises(ProviderError) as exc:
            OpenAICompatProvider("qwen3:8b", client).complete(ask())
    message = str(exc.value)
    # The user and password went out as HTTP Basic credentials, which the server quoted back.
    assert "rejected the API key (401)" in message and "Basic ***" in message
    assert "http://***@127.0.0.1:" in message
    basic = "YWRtaW4tdXNlcjpodW50ZXIyLXBhc3M="  # base64 of admin-user:hunter2-pass
    for secret in ("admin-user", "hunter2-pass", basic):
        assert secret not in message


def test_a_shared_mcp_servers_address_is_shown_to_others_without_its_credentials(
    client_alice, make_user
):
    from planner_ui.models import McpServer

    McpServer.objects.create(
        name="notes",
        transport=McpServer.Transport.HTTP,
        url="https://ops:s3cret-pw@mcp.example/mcp?token=tok-live-9",
    )
    page = client_alice.get(reverse("mcp_servers")).content.decode()
    assert "https://***@mcp.example/mcp?token=***" in page
    assert "s3cret-pw" not in page and "tok-live-9" not in page
    admin = make_user("root")
    admin.is_staff = True
    admin.save()
    staff = Client()
    staff.force_login(admin)
    assert "s3cret-pw" in staff.get(reverse("mcp_servers")).content.decode()  # its manager
