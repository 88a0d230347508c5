"""Where a login or a logout sends the browser next: only to a page of this site, whatever a
link's `next` says (Django's check, held here so a custom view cannot lose it)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db

ELSEWHERE = [
    "https://evil.example/",
    "//evil.example/",
    "/\\evil.example/",
    "https:evil.example",
    "javascript:alert(1)",
]


@pytest.mark.parametrize("target", ELSEWHERE)
def test_logging_in_never_leaves_the_site(alice, target: str) -> None:
    client = Client()
    page = client.get(reverse("login"), {"next": target}).content.decode()
    assert 'name="next"' in page  # carried in the form, escaped
    response = client.post(
        reverse("login"), {"username": "alice", "password": "pw-for-tests-1", "next": target}
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("home")


@pytest.mark.parametrize("target", ELSEWHERE)
def test_logging_out_never_leaves_the_site(client_alice, target: str) -> None:
    response = client_alice.post(reverse("logout"), {"next": target})
    assert response.status_code == 302
    assert response["Location"] == reverse("login")


def test_control_a_page_of_the_site_is_where_a_login_goes(alice) -> None:
    response = Client().post(
        reverse("login"), {"username": "alice", "password": "pw-for-tests-1", "next": "/runs/"}
    )
    assert response["Location"] == "/runs/"
