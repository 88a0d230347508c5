"""Choosing models and a budget at submission, and seeing what a run's calls cost."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from planner_ui.models import ModelCall, ProviderCredential, Run
from planner_ui.services.runs import run_approve_plan, run_plan
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db


def test_the_form_shows_the_configured_models_and_which_providers_are_ready(client_alice, settings):
    settings.ANTHROPIC_API_KEY = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz-WXYZ"
    settings.OPENAI_BASE_URL = ""
    page = client_alice.get(reverse("home")).content.decode()
    assert 'placeholder="offline:offline-v1"' in page
    assert "key sk-…WXYZ from the environment" in page
    assert "abcdefghijklmnop" not in page  # never the key itself
    assert "no server: set OPENAI_BASE_URL" in page
    assert '<option value="anthropic:claude-opus-5-5">' in page


def test_submitting_models_and_a_budget_stores_them_with_the_run(client_alice, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    response = client_alice.post(
        reverse("run_new"),
        {
            "task": "Research tea and coffee",
            "route_executor_coder": "openai:qwen3-coder:30b",
            "budget_tokens": "50000",
            "budget_usd": "1.25",
        },
    )
    assert response.status_code == 302
    run = Run.objects.get()
    assert run.routes["executor:coder"] == "openai:qwen3-coder:30b"
    assert run.routes["executor:writer"] == "offline:offline-v1"
    assert (run.budget_tokens, run.budget_usd) == (50_000, Decimal("1.25"))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"route_planner": "anthropic:claude-opus-5-5"}, "needs an Anthropic API key"),
        ({"route_executor": "openai:two words"}, "is not a model id"),
        ({"budget_tokens": "0"}, "Ensure this value is greater than or equal to 1."),
    ],
)
def test_a_bad_choice_is_refused_with_the_reason_and_keeps_the_task(
    client_alice, settings, fields, message
):
    settings.ANTHROPIC_API_KEY = ""
    response = client_alice.post(reverse("run_new"), {"task": "Research tea", **fields})
    page = response.content.decode()
    assert response.status_code == 400
    assert message in page
    assert "Research tea</textarea>" in page
    assert 'id="run-options" open' in page
    assert not Run.objects.exists()


def test_the_run_page_shows_routes_and_usage_per_role(client_alice, alice, settings):
    settings.AGENTSITE_PRICES = {"offline:*": {"input": 3, "output": 15}}
    response = client_alice.post(reverse("run_new"), {"task": "Research tea and coffee"})
    run = Run.objects.get()
    run_plan(run.pk)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == "succeeded", run.error
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert response.status_code == 302
    assert 'id="usage-by-role"' in page
    for role in ModelCall.objects.filter(run=run).values_list("role", flat=True).distinct():
        assert f'<tr data-role="{role}">' in page
    assert f'<dd id="run-calls">{run.model_calls}</dd>' in page
    assert run.cost_usd > 0
    assert f"${run.cost_usd.quantize(Decimal('0.0001'))}" in page
    history = client_alice.get(reverse("run_list")).content.decode()
    assert f"<td>{run.model_calls}</td>" in history


def test_an_unpriced_model_is_shown_as_unpriced_not_free(client_alice, settings):
    settings.AGENTSITE_PRICES = {}
    client_alice.post(reverse("run_new"), {"task": "Research tea"})
    run = Run.objects.get()
    run_plan(run.pk)
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "+ 1 unpriced call" in page


@pytest.fixture
def admin_client(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    return client


KEY = "sk-ant-api03-SECRETSECRETSECRET-tail"


def test_an_admin_key_is_stored_never_shown_and_kept_when_left_empty(admin_client):
    add = reverse("admin:planner_ui_providercredential_add")
    response = admin_client.post(add, {"provider": "anthropic", "api_key": KEY, "base_url": ""})
    assert response.status_code == 302
    credential = ProviderCredential.objects.get()
    # Stored sealed: the database row does not hold it, the model opens it.
    assert credential.key() == KEY and "SECRETSECRET" not in credential.api_key
    assert credential.api_key.startswith("sealed1:")
    change = reverse("admin:planner_ui_providercredential_change", args=[credential.pk])
    for url in (reverse("admin:planner_ui_providercredential_changelist"), change):
        page = admin_client.get(url).content.decode()
        assert "SECRETSECRET" not in page
        assert "sk-…tail" in page
    # Saving without typing a key keeps it; the box to remove it removes it.
    admin_client.post(change, {"provider": "anthropic", "api_key": "", "base_url": ""})
    credential.refresh_from_db()
    assert credential.key() == KEY
    admin_client.post(
        change, {"provider": "anthropic", "api_key": "", "clear_key": "on", "base_url": ""}
    )
    credential.refresh_from_db()
    assert credential.api_key == ""


def test_an_admin_key_wins_over_the_environment(settings, make_user):
    from planner_ui.services.providers import credentials

    settings.ANTHROPIC_API_KEY = "sk-env-key-0000000000"
    assert credentials("anthropic").source == "environment"
    credential = ProviderCredential(provider="anthropic")
    credential.set_key(KEY)
    credential.save()
    creds = credentials("anthropic")
    assert (creds.api_key, creds.source) == (KEY, "admin")


def test_a_key_sealed_under_another_secret_key_says_so_everywhere(settings, alice):
    from django.test import Client

    from planner_ui.core.routing import Route, RouteError
    from planner_ui.services.providers import check_available, credentials

    credential = ProviderCredential(provider="anthropic")
    credential.set_key(KEY)
    credential.save()
    settings.SECRET_KEY = "another-secret-key-after-a-rotation"
    settings.ANTHROPIC_API_KEY = ""
    creds = credentials("anthropic")
    assert creds.api_key == "" and creds.problem.startswith(
        "the stored key was sealed under another secret key (DJANGO_SECRET_KEY changed)"
    )
    with pytest.raises(RouteError, match=r"needs an Anthropic API key, and the stored key was"):
        check_available(Route("anthropic", "claude-sonnet-5-5"))
    client = Client()
    client.force_login(alice)  # a session of the new secret key
    page = client.get(reverse("home")).content.decode()
    assert "no key: the stored key was sealed under another secret key" in page
    assert ProviderCredential.objects.get().masked_key.startswith("unreadable")


def test_a_rotated_secret_key_listed_as_a_fallback_keeps_the_key_and_a_save_reseals_it(
    settings, admin_client, admin_user
):
    from planner_ui.services.providers import credentials

    credential = ProviderCredential(provider="anthropic")
    credential.set_key(KEY)
    credential.save()
    old = settings.SECRET_KEY
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "the-new-secret-key", [old]
    assert credentials("anthropic").api_key == KEY
    admin_client.force_login(admin_user)  # a session of the new secret
    change = reverse("admin:planner_ui_providercredential_change", args=[credential.pk])
    response = admin_client.post(change, {"provider": "anthropic", "api_key": "", "base_url": ""})
    assert response.status_code == 302
    settings.SECRET_KEY_FALLBACKS = []  # the old secret retired: the key opens still
    assert ProviderCredential.objects.get().key() == KEY


def test_a_key_stored_in_clear_before_sealing_is_sealed_by_the_migration(settings):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("planner_ui.migrations.0017_sealed_provider_keys")
    ProviderCredential.objects.create(provider="anthropic", api_key=KEY)  # as before
    assert ProviderCredential.objects.get().key() == KEY  # read as it is, meanwhile
    migration.seal_stored_keys(apps, None)
    stored = ProviderCredential.objects.get()
    assert stored.api_key.startswith("sealed1:") and stored.key() == KEY
    migration.open_sealed_keys(apps, None)
    assert ProviderCredential.objects.get().api_key == KEY


def test_the_configured_default_budget_is_filled_in_and_can_be_cleared(client_alice, settings):
    settings.AGENTSITE_DEFAULT_BUDGET_TOKENS = 20_000
    page = client_alice.get(reverse("home")).content.decode()
    assert 'name="budget_tokens" value="20000"' in page
    client_alice.post(reverse("run_new"), {"task": "Research tea", "budget_tokens": ""})
    assert Run.objects.get().budget_tokens is None
