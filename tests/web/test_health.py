"""/healthz answers while the process runs; /readyz says whether the site can do its work, and
what is missing when it cannot. The submission form warns when no worker is alive."""

from __future__ import annotations

import pytest
from django.urls import reverse

from planner_ui.services.leases import worker_alive_beat
from planner_ui.services.redis_store import redis_client, redis_key


@pytest.fixture(autouse=True)
def no_workers():
    for key in redis_client().scan_iter(match=redis_key("worker", "*")):
        redis_client().delete(key)


def test_healthz_needs_no_login_and_no_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.fixture
def client_staff(make_user):
    from django.test import Client

    admin = make_user("root")
    admin.is_staff = True
    admin.save()
    client = Client()
    client.force_login(admin)
    return client


@pytest.mark.django_db
def test_readyz_says_what_is_missing_to_staff(client_staff, client):
    assert client.get("/readyz").json() == {"ready": False}  # anyone else: the status alone
    response = client_staff.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {
        "ready": False,
        "checks": {
            "database": {"ok": True},
            "redis": {"ok": True},
            "workers": {"ok": False, "error": "no worker has said it is alive lately: start one"},
        },
    }


@pytest.mark.django_db
def test_readyz_is_ready_with_a_live_worker(client_staff):
    beat = worker_alive_beat("celery@machine-b")
    try:
        response = client_staff.get("/readyz")
    finally:
        beat.stop()
    assert response.status_code == 200
    assert response.json()["checks"]["workers"] == {"ok": True, "alive": ["celery@machine-b"]}


@pytest.mark.django_db
def test_the_form_warns_when_no_worker_is_alive_and_still_takes_the_task(client_alice):
    page = client_alice.get(reverse("home")).content.decode()
    assert 'id="no-workers"' in page
    assert "No worker has answered in the last 30 s: a task you submit waits" in page
    response = client_alice.post(reverse("run_new"), {"task": "Research tea"})
    assert response.status_code == 302


@pytest.mark.django_db
def test_the_form_says_nothing_while_a_worker_is_alive(client_alice):
    beat = worker_alive_beat("celery@machine-c")
    try:
        page = client_alice.get(reverse("home")).content.decode()
    finally:
        beat.stop()
    assert 'id="no-workers"' not in page
