"""Login throttling: 40 wrong passwords in 15 s used to be answered 40 times, so a password
could be guessed at the speed of the server. Now, after AXES_FAILURE_LIMIT (5) failures for one
username from one address, that pair is refused (429, with a page that says why and for how
long) on the login page and on the admin's; another address, or another user, is not."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def throttling(settings):
    """On, as in production (agentsite.settings); the test settings switch it off."""
    settings.AXES_ENABLED = True


PASSWORD = "pw-for-tests-1"  # conftest's make_user
LIMIT = 5  # AXES_FAILURE_LIMIT's default (AGENTSITE_LOGIN_FAILURE_LIMIT)


def attempt(client: Client, password: str, *, url: str = "", address: str = "10.0.0.7"):
    return client.post(
        url or reverse("login"),
        {"username": "alice", "password": password},
        REMOTE_ADDR=address,
    )


def test_forty_wrong_passwords_are_not_forty_guesses(alice):
    client = Client()
    answers = [attempt(client, f"guess-{n}").status_code for n in range(40)]
    # The wrong passwords before the limit are told so; from the limit on, refused unchecked.
    assert answers[: LIMIT - 1] == [200] * (LIMIT - 1)
    assert set(answers[LIMIT:]) == {429}
    locked = attempt(client, PASSWORD)  # even the right one, while the pair is locked out
    assert locked.status_code == 429
    page = locked.content.decode()
    assert "Too many failed logins" in page
    assert "After 5 wrong passwords for <strong>alice</strong> from this address" in page
    assert "refused for 15 minutes" in page
    assert "_auth_user_id" not in client.session
    assert settings.AXES_FAILURE_LIMIT == LIMIT


def test_another_address_and_another_user_are_not_locked_out(alice, make_user):
    make_user("bob")
    client = Client()
    for n in range(LIMIT):
        attempt(client, f"guess-{n}")
    assert attempt(client, PASSWORD).status_code == 429
    # Alice from her own address: nobody can lock her out by guessing from elsewhere.
    elsewhere = Client()
    assert attempt(elsewhere, PASSWORD, address="10.0.0.8").status_code == 302
    # Bob from the guessing address.
    bob = Client()
    response = bob.post(
        reverse("login"), {"username": "bob", "password": PASSWORD}, REMOTE_ADDR="10.0.0.7"
    )
    assert response.status_code == 302


def test_the_admin_login_is_throttled_too(make_user):
    admin = make_user("alice")
    admin.is_staff = admin.is_superuser = True
    admin.save()
    client = Client()
    url = reverse("admin:login")
    for n in range(LIMIT):
        attempt(client, f"guess-{n}", url=url)
    assert attempt(client, PASSWORD, url=url).status_code == 429
    assert client.get(reverse("admin:index")).status_code == 302  # not logged in


def test_the_lockout_ends_after_the_cool_off_and_a_success_clears_the_count(alice, settings):
    settings.AXES_COOLOFF_TIME = timedelta(seconds=1)
    client = Client()
    for n in range(LIMIT - 1):
        attempt(client, f"guess-{n}")
    assert attempt(client, PASSWORD).status_code == 302  # the count starts again
    for n in range(LIMIT - 1):
        assert attempt(Client(), f"guess-{n}").status_code == 200
    assert attempt(Client(), "guess-last").status_code == 429
    assert attempt(Client(), PASSWORD).status_code == 429
    time.sleep(1.2)
    assert attempt(Client(), PASSWORD).status_code == 302


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_through_the_asgi_handler_daphne_serves_it_is_throttled_too(alice):
    """Daphne runs the middleware as coroutines, where django-axes answers from another path."""
    from django.test import AsyncClient

    client = AsyncClient()
    url = reverse("login")
    for n in range(LIMIT):
        await client.post(url, {"username": "alice", "password": f"guess-{n}"})
    locked = await client.post(url, {"username": "alice", "password": PASSWORD})
    assert locked.status_code == 429
    assert "After 5 wrong passwords for <strong>alice</strong>" in locked.content.decode()
