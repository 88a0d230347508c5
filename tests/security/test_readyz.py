"""/readyz tells a probe whether the site can work; what it checked (the workers' host names,
the errors' text) only staff see. Anyone else learns nothing about the deployment."""

from __future__ import annotations

import pytest
from django.test import Client

from planner_ui.services.leases import worker_alive_beat

pytestmark = pytest.mark.django_db

WORKER = "celery@build-host-7"


@pytest.fixture
def live_worker():
    beat = worker_alive_beat(WORKER)
    yield WORKER
    beat.stop()


def test_an_anonymous_probe_gets_the_status_alone(client, live_worker):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"ready": True}
    assert WORKER not in response.content.decode()


def test_a_user_who_is_not_staff_gets_the_status_alone(client_alice, live_worker):
    response = client_alice.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"ready": True}


def test_staff_see_every_check_and_the_workers(make_user, live_worker):
    admin = make_user("root")
    admin.is_staff = True
    admin.save()
    client = Client()
    client.force_login(admin)
    response = client.get("/readyz")
    assert response.status_code == 200
    checks = response.json()["checks"]
    assert checks["database"] == {"ok": True} and checks["redis"] == {"ok": True}
    assert WORKER in checks["workers"]["alive"]
