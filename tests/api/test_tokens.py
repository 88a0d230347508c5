"""Personal API tokens: made on the settings page and shown once, kept only as a digest,
revoked for good; the API refuses a request without a live token."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from planner_ui.models import ApiToken
from planner_ui.services.tokens import token_create, token_revoke

pytestmark = pytest.mark.django_db


def test_the_page_makes_a_token_shows_it_once_and_keeps_only_its_digest(client_alice) -> None:
    made = client_alice.post(reverse("api_tokens"), {"name": "nightly script"})
    # Made on POST, shown after a redirect: reloading the page that shows it makes no other.
    assert made.status_code == 302 and made["Location"] == reverse("api_tokens")
    response = client_alice.get(made["Location"])
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    body = response.content.decode()
    assert 'id="copy-token"' in body
    token = ApiToken.objects.get()
    raw = body.split('id="new-token-value">')[1].split("<")[0]
    assert raw.startswith("ast_") and len(raw) > 40
    assert token.name == "nightly script" and raw.startswith(token.prefix)
    assert raw not in (token.digest, token.prefix) and len(token.digest) == 64
    # Shown once: the page lists it afterwards by its prefix only.
    again = client_alice.get(reverse("api_tokens")).content.decode()
    assert raw not in again and f"{token.prefix}…" in again
    assert 'id="copy-token"' not in again
    assert ApiToken.objects.count() == 1
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    assert api.get("/api/v1/runs").status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_a_revoked_token_no_longer_works(client_alice, alice) -> None:
    token, raw = token_create(user=alice, name="laptop")
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    assert api.get("/api/v1/runs").status_code == 200
    response = client_alice.post(reverse("api_token_revoke", args=[token.pk]))
    assert response.status_code == 302
    assert api.get("/api/v1/runs").status_code == 401
    assert "revoked" in client_alice.get(reverse("api_tokens")).content.decode()


def test_nobody_revokes_another_users_token(alice, make_user) -> None:
    token, raw = token_create(user=alice, name="laptop")
    bob = Client()
    bob.force_login(make_user("bob"))
    assert bob.post(reverse("api_token_revoke", args=[token.pk])).status_code == 404
    with pytest.raises(ApiToken.DoesNotExist):
        token_revoke(user=make_user("carol"), token_id=token.pk)
    token.refresh_from_db()
    assert token.revoked_at is None


@pytest.mark.parametrize(
    "header",
    ["", "Bearer", "Bearer nope", "Bearer ast_not-a-real-token", "Token ast_x", "Basic YTpi"],
)
def test_requests_without_a_live_token_are_401(header) -> None:
    client = Client(headers={"Authorization": header} if header else {})
    response = client.get("/api/v1/runs")
    assert response.status_code == 401
    assert response.json() == {"detail": "Unauthorized"}


def test_a_session_alone_does_not_open_the_api(client_alice) -> None:
    # The pages' cookie is not a credential here: no CSRF-less writes from another site.
    assert client_alice.get("/api/v1/runs").status_code == 401
    assert (
        client_alice.post(
            "/api/v1/runs", {"task": "x"}, content_type="application/json"
        ).status_code
        == 401
    )


def test_names_are_required_and_tokens_are_capped(client_alice, alice) -> None:
    response = client_alice.post(reverse("api_tokens"), {"name": "  "}, follow=True)
    assert "Give the token a name" in response.content.decode()
    for n in range(20):
        token_create(user=alice, name=f"t{n}")
    response = client_alice.post(reverse("api_tokens"), {"name": "one more"}, follow=True)
    assert "You have 20 tokens already" in response.content.decode()


def test_the_token_form_needs_csrf(alice) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    assert strict.post(reverse("api_tokens"), {"name": "x"}).status_code == 403
    assert not ApiToken.objects.exists()


def test_the_docs_and_schema_are_served_from_this_site() -> None:
    schema = Client().get("/api/v1/openapi.json").json()
    assert schema["info"]["title"] == "agentsite API"
    paths = set(schema["paths"])
    for expected in (
        "/api/v1/runs",
        "/api/v1/runs/{run_id}",
        "/api/v1/runs/{run_id}/plan/edits",
        "/api/v1/runs/{run_id}/plan/approve",
        "/api/v1/runs/{run_id}/events",
        "/api/v1/approvals",
        "/api/v1/approvals/{approval_id}/decide",
    ):
        assert expected in paths
    docs = Client().get("/api/v1/docs").content.decode()
    # No CDN: the page loads Swagger UI from the site's own static files.
    assert "/static/ninja/swagger-ui-bundle.js" in docs and "cdn" not in docs.lower()
