"""`manage.py local_models`, the model supervisor `make run` starts, as a real process on the
test database: it serves a real GGUF model (SmolLM2-135M on llama.cpp) once an admin asks,
stops it when asked, says why a file that is not a model failed, and stops what it serves
when it is stopped itself."""

from __future__ import annotations

import json
import urllib.request

import pytest
from django.conf import settings

from agentsite import embedded
from planner_ui.models import LocalModel
from planner_ui.services.local_models import local_model_start, local_model_stop
from tests.conftest import wait_until
from tests.providers.test_local_model import smollm2

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_user("root", password="pw-for-tests-1", is_staff=True)


def _state(model: LocalModel) -> str:
    model.refresh_from_db()
    return model.state


def _answers(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(base_url + "/models", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def test_it_serves_a_real_model_when_asked_and_stops_it_when_asked(model_supervisor, admin) -> None:
    model = local_model_start(user=admin, path=str(smollm2()))
    wait_until(lambda: _state(model) == "ready", timeout=120, what="the model to be ready")
    with urllib.request.urlopen(model.base_url + "/models", timeout=5) as response:
        listed = json.loads(response.read())
    # It answers to the name routes use.
    assert [m["id"] for m in listed["data"]] == [model.name]
    base_url = model.base_url

    local_model_stop(user=admin, model_id=model.pk)
    wait_until(lambda: _state(model) == "stopped", timeout=30, what="the model to stop")
    assert model.detail == "stopped by an administrator" and model.base_url == ""
    assert not _answers(base_url)


def test_a_file_that_is_not_a_model_fails_with_the_servers_reason(
    model_supervisor, admin, tmp_path
):
    bogus = tmp_path / "notes.gguf"
    bogus.write_bytes(b"GGUF" + b"\0" * 60)  # looks like one, is not
    model = local_model_start(user=admin, path=str(bogus))
    wait_until(lambda: _state(model) == "failed", timeout=60, what="the load to fail")
    assert model.detail.startswith(f"the server exited with code 1: Could not load {bogus}: ")
    assert model.detail.endswith(f"(see {settings.VAR_DIR / 'logs' / 'model-notes.log'})")
    assert not model.wanted  # not loaded over and over


def test_stopping_the_supervisor_stops_the_models_it_serves(model_supervisor, admin) -> None:
    model = local_model_start(user=admin, path=str(smollm2()))
    wait_until(lambda: _state(model) == "ready", timeout=120, what="the model to be ready")
    base_url = model.base_url
    embedded.stop_processes([model_supervisor])
    assert model_supervisor.returncode == 0
    assert _state(model) == "stopped" and model.detail == "stopped with make run"
    assert not _answers(base_url)
