"""The production files say the same commands, and name things that exist."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def procfile() -> dict[str, str]:
    lines = (REPO / "Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip())


def test_the_procfile_has_the_web_server_workers_and_migrations_and_no_beat():
    # Every worker sweeps (services.sweeper): beat would be one process more that must not die.
    assert set(procfile()) == {"release", "web", "worker"}


def test_workers_take_their_queue_from_the_settings():
    # -Q would name one queue for every install: AGENTSITE_PREFIX names it (settings).
    compose = (REPO / "compose.yaml").read_text()
    assert "-Q" not in procfile()["worker"] and " -Q " not in compose


def test_compose_runs_the_procfiles_commands():
    compose = (REPO / "compose.yaml").read_text()
    commands = re.findall(r"^    command: (.+)$", compose, re.M)
    procs = procfile()
    assert procs["worker"] in commands
    assert "python manage.py migrate --noinput" in commands
    assert any("daphne -b 0.0.0.0" in c and "agentsite.asgi:application" in c for c in commands)
    assert re.search(r"^  worker:\n(?:    .*\n)*?    deploy:\n      replicas: 2$", compose, re.M)


def test_the_commands_name_an_app_that_exists(settings):
    module, _, name = "agentsite.asgi:application".partition(":")
    assert callable(getattr(importlib.import_module(module), name))
    from agentsite.celery import app

    assert app.main == "agentsite"
    assert "planner_ui.tasks.sweep" in {e["task"] for e in settings.CELERY_BEAT_SCHEDULE.values()}


def test_the_image_installs_no_embedded_redis_and_runs_as_a_user():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert (
        "pip install --no-cache-dir -e .\n" in dockerfile
        and "embedded" not in re.findall(r"pip install[^\n]*", dockerfile)[0]
    )
    assert re.search(r"^USER agentsite$", dockerfile, re.M)


def test_every_lasting_service_restarts_and_says_whether_it_is_healthy():
    import yaml

    services = yaml.safe_load((REPO / "compose.yaml").read_text())["services"]
    assert set(services) == {"db", "redis", "migrate", "web", "worker"}
    for name, service in services.items():
        if name == "migrate":  # a one-off: done once it has migrated
            assert service["restart"] == "no"
            continue
        assert service["restart"] == "unless-stopped", name
        assert service["healthcheck"]["test"], name
    # The web server's probe names no host of DJANGO_ALLOWED_HOSTS (agentsite.probes answers).
    assert "http://127.0.0.1:8000/healthz" in " ".join(services["web"]["healthcheck"]["test"])
    assert (
        "inspect ping --destination celery@$$HOSTNAME"
        in services["worker"]["healthcheck"]["test"][1]
    )
    # Persistent connections beside the pool are refused at start-up (settings).
    assert "DATABASE_CONN_MAX_AGE" not in services["web"]["environment"]
