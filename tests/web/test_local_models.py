"""The form's local models, over HTTP: only staff see and change them, htmx gets the panel
back (with the outcome), a plain form post goes back to the form, and CSRF holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from planner_ui.models import LocalModel
from planner_ui.services.local_models import supervised_loading, supervised_ready

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def client_admin(make_user) -> Client:
    admin = make_user("admin")
    admin.is_staff = True
    admin.save()
    client = Client()
    client.force_login(admin)
    return client


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "tiny-instruct.gguf"
    path.write_bytes(b"GGUF")
    return path


def test_the_form_shows_the_panel_to_staff_only(client_admin, client_alice) -> None:
    assert 'id="local-models"' in client_admin.get(reverse("home")).content.decode()
    page = client_alice.get(reverse("home")).content.decode()
    assert 'id="local-models"' not in page and "local-model-form" not in page
    # Everyone sees whether a local model answers, among the providers.
    assert "none running: an administrator starts a GGUF model here" in page


def test_others_may_not_look_start_or_stop(client_alice, gguf) -> None:
    assert client_alice.get(reverse("local_models"), **HTMX).status_code == 403
    start = client_alice.post(reverse("local_model_start"), {"model_path": str(gguf)}, **HTMX)
    assert start.status_code == 403
    assert start.content.decode().startswith("Only an administrator can start a local model")
    model = LocalModel.objects.create(path=str(gguf), name=gguf.stem)
    stop = client_alice.post(reverse("local_model_stop", args=[model.pk]), **HTMX)
    assert stop.status_code == 403 and LocalModel.objects.get().wanted


def test_starting_from_the_panel_answers_with_the_panel(client_admin, gguf) -> None:
    response = client_admin.post(
        reverse("local_model_start"), {"model_path": str(gguf), "default_route": "on"}, **HTMX
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "Starting tiny-instruct: it answers as local:tiny-instruct." in body
    assert 'data-state="waiting"' in body and 'hx-trigger="every 2s"' in body
    model = LocalModel.objects.get()
    assert model.wanted and model.default_route and model.path == str(gguf)

    supervised_loading(model.pk, "http://127.0.0.1:8123/v1")
    supervised_ready(model.pk)
    body = client_admin.get(reverse("local_models"), **HTMX).content.decode()
    assert 'data-state="ready"' in body and "every 2s" not in body  # nothing left to watch
    home = client_admin.get(reverse("home")).content.decode()
    assert '<option value="local:tiny-instruct">' in home  # suggested for every route field
    assert 'placeholder="local:tiny-instruct"' in home  # the default of every part

    response = client_admin.post(reverse("local_model_stop", args=[model.pk]), **HTMX)
    assert "Stopping tiny-instruct." in response.content.decode()
    assert (
        'data-state="ready"' in response.content.decode()
        and "stopping" in response.content.decode()
    )


def test_a_refusal_is_shown_in_the_panel(client_admin) -> None:
    response = client_admin.post(
        reverse("local_model_start"), {"model_path": "/nowhere/x.gguf"}, **HTMX
    )
    assert response.status_code == 400
    assert "There is no file at /nowhere/x.gguf on this machine." in response.content.decode()


def test_without_javascript_the_outcome_comes_back_on_the_form(client_admin, gguf) -> None:
    response = client_admin.post(
        reverse("local_model_start"), {"model_path": str(gguf)}, follow=True
    )
    assert response.redirect_chain == [(reverse("home"), 302)]
    assert "Starting tiny-instruct" in response.content.decode()


def test_starting_needs_the_csrf_token(make_user, gguf) -> None:
    admin = make_user("admin")
    admin.is_staff = True
    admin.save()
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin)
    response = client.post(reverse("local_model_start"), {"model_path": str(gguf)}, **HTMX)
    assert response.status_code == 403 and not LocalModel.objects.exists()
