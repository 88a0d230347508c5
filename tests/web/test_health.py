"""/healthz answers while the process runs; /readyz says whether the site can do its work, and
what is missing when it cannot, whatever Host a probe names and whatever the database does.
The form and a running run's page warn when no worker is alive."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from agentsite import embedded
from planner_ui.services.leases import worker_alive_beat
from planner_ui.stores.redis_store import redis_client, redis_key
from tests.conftest import child_env


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
def test_readyz_stays_ready_without_workers_and_tells_staff_what_is_missing(client_staff, client):
    # Without a worker the pages still serve: a load balancer must keep sending people here.
    anyone = client.get("/readyz")
    assert (anyone.status_code, anyone.json()) == (200, {"ready": True})  # the status alone
    response = client_staff.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {
        "ready": True,
        "checks": {
            "database": {"ok": True},
            "redis": {"ok": True},
            "sweep": {"ok": True, "seconds_since": None},
            "workers": {
                "ok": False,
                "error": "no worker has said it is alive in the last 30 s: start one (the "
                "pages still serve)",
            },
        },
    }


@pytest.mark.django_db
def test_readyz_lists_the_live_workers_to_staff(client_staff):
    beat = worker_alive_beat("celery@machine-b")
    try:
        response = client_staff.get("/readyz")
    finally:
        beat.stop()
    assert response.status_code == 200
    assert response.json()["checks"]["workers"] == {"ok": True, "alive": ["celery@machine-b"]}


@pytest.mark.django_db
def test_probes_answer_whatever_host_they_name(client, client_staff, settings):
    # The README's production host list; a load balancer probes by address, over plain HTTP.
    settings.ALLOWED_HOSTS = ["agents.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    for host in ("10.0.0.7:8000", "[fd00::7]", "agents.example.com"):
        healthz = client.get("/healthz", HTTP_HOST=host)
        assert (healthz.status_code, healthz.json()) == (200, {"status": "ok"}), host
        readyz = client.get("/readyz", HTTP_HOST=host)
        assert (readyz.status_code, readyz.json()) == (200, {"ready": True}), host
        # Staff's session names the site's host; by address, no details.
        staff = client_staff.get("/readyz", HTTP_HOST=host, secure=True)
        assert ("checks" in staff.json()) is (host == "agents.example.com"), host
    # Everything else still checks the host.
    assert client.get("/accounts/login/", HTTP_HOST="10.0.0.7", secure=True).status_code == 400


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


@pytest.mark.django_db
def test_the_run_page_says_its_steps_wait_while_no_worker_is_alive(client_alice, alice):
    from planner_ui.models import Run

    run = Run.objects.create(owner=alice, task="Research tea", status="running")
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "No worker has answered in the last 30 s: this run's steps wait" in page
    beat = worker_alive_beat("celery@machine-d")
    try:
        assert (
            'id="no-workers"'
            not in client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
        )
    finally:
        beat.stop()
    run.status = "succeeded"  # a finished run waits for nobody
    run.save()
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'id="no-workers"' not in page


@pytest.fixture
def silent_postgres():
    """A TCP port that accepts connections and never says a word, as a stopped or cut-off
    PostgreSQL looks from a web server."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


@pytest.mark.stack
def test_a_server_probed_by_address_answers_within_2_s_while_postgresql_is_silent(
    silent_postgres, tmp_path
):
    port = embedded.free_port()
    env = child_env(
        DJANGO_SETTINGS_MODULE="agentsite.settings",
        DJANGO_SECRET_KEY="probes",
        DJANGO_ALLOWED_HOSTS="agents.example.com",
        AGENTSITE_VAR_DIR=str(tmp_path),
        DATABASE_URL=f"postgres://agentsite@127.0.0.1:{silent_postgres}/agentsite",
    )
    daphne = embedded.start_daphne(env=env, port=port, log_path=tmp_path / "daphne.log")
    try:
        base = f"http://127.0.0.1:{port}"  # by address, as a load balancer probes
        embedded.wait_for_http(base + "/healthz", timeout=60)
        assert _get(base + "/healthz")[:2] == (200, {"status": "ok"})
        for _ in range(3):
            status, body, took = _get(base + "/readyz")
            assert (status, body) == (503, {"ready": False})
            assert took < 2.0, f"/readyz took {took:.2f} s"
    finally:
        embedded.stop_processes([daphne])


def _get(url: str) -> tuple[int, dict, float]:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as refused:
        status, raw = refused.code, refused.read()
    return status, json.loads(raw), time.monotonic() - started


@pytest.mark.django_db(transaction=True)
def test_a_sweep_overdue_while_workers_live_is_said_on_the_form_and_to_staff(
    client_alice, client_staff
):
    from planner_ui.models import Sweep

    # The database's clock stamps a sweep: five minutes ago, no worker has swept since.
    Sweep.objects.create(swept_at=timezone.now() - timedelta(minutes=5), swept_by="celery@gone")
    beat = worker_alive_beat("celery@machine-d")
    try:
        page = client_alice.get(reverse("home")).content.decode()
        ready = client_staff.get("/readyz")
    finally:
        beat.stop()
    assert 'id="no-sweep"' in page and 'id="no-workers"' not in page
    assert re.search(r"No sweep has run for 3\d\d s, though workers are alive", page)
    # Information only: the site still serves its pages.
    assert ready.status_code == 200
    sweep = ready.json()["checks"]["sweep"]
    assert sweep["ok"] is False and 299 < sweep["seconds_since"] < 400
    assert sweep["error"].endswith("a dead worker's steps are not taken over")


@pytest.mark.django_db(transaction=True)
def test_a_recent_sweep_says_nothing(client_alice):
    from planner_ui.models import Sweep

    Sweep.objects.create(swept_at=timezone.now(), swept_by="celery@here")
    beat = worker_alive_beat("celery@machine-e")
    try:
        page = client_alice.get(reverse("home")).content.decode()
    finally:
        beat.stop()
    assert 'id="no-sweep"' not in page and 'id="no-workers"' not in page


@pytest.mark.django_db(transaction=True)
def test_readyz_checks_give_back_the_database_connections_they_open(client_staff):
    """The checks run in threads that outlive the request: a connection one kept open stayed out
    of PostgreSQL's pool for good, and four probes took a web server's whole pool."""
    from django.db import connections

    from planner_ui.models import Sweep
    from planner_ui.views import health

    Sweep.objects.create(swept_at=timezone.now(), swept_by="celery@here")
    used = []

    def sweep_check() -> dict:
        wrapper = connections["default"]  # this thread's own
        used.append(wrapper)
        answer = health._sweep()  # reads the Sweep row through it
        assert wrapper.connection is not None
        return answer

    checks = health._run_checks({"sweep": sweep_check, "database": health._database})
    assert checks["sweep"]["ok"] is True and checks["database"]["ok"] is True
    assert len(used) == 1 and used[0].connection is None
    # And through the view too, more times than the pool of checks has threads.
    for _ in range(6):
        assert client_staff.get("/readyz").json()["checks"]["sweep"]["ok"] is True
