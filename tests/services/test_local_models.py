"""Local models an admin starts from the form: who may ask, what is refused, and how a route
`local:<name>` reaches a model only once `make run`'s supervisor says it is ready."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner_ui.core.errors import ProviderError
from planner_ui.core.routing import Route, RouteError
from planner_ui.models import LocalModel
from planner_ui.selectors.routes import configured_routes
from planner_ui.services.local_models import (
    LocalModelRefused,
    local_model_start,
    local_model_stop,
    local_model_url,
    supervised_failed,
    supervised_loading,
    supervised_ready,
)
from planner_ui.services.providers import check_available, provider_build, routes_for_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_user("root", password="pw-for-tests-1", is_staff=True)


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "qwen2.5-1.5b-instruct-q4_k_m.gguf"
    path.write_bytes(b"GGUF")  # only the supervisor's server reads it
    return path


def _ready(model: LocalModel, port: int = 8123) -> None:
    supervised_loading(model.pk, f"http://127.0.0.1:{port}/v1")
    supervised_ready(model.pk)


def test_only_staff_may_start_or_stop_a_local_model(alice, admin, gguf) -> None:
    with pytest.raises(LocalModelRefused, match="^Only an administrator can start a local model"):
        local_model_start(user=alice, path=str(gguf))
    model = local_model_start(user=admin, path=str(gguf))
    with pytest.raises(LocalModelRefused, match="^Only an administrator can stop a local model"):
        local_model_stop(user=alice, model_id=model.pk)
    assert LocalModel.objects.get().wanted


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("", "Give the full path of a .gguf file"),
        ("/etc/passwd", "Give the full path of a .gguf file"),
        ("models/x.gguf", "models/x.gguf is not a full path: start it with /."),
        ("/nowhere/x.gguf", "There is no file at /nowhere/x.gguf on this machine."),
    ],
)
def test_a_path_that_is_not_a_gguf_file_here_is_refused(admin, path, error) -> None:
    with pytest.raises(LocalModelRefused) as caught:
        local_model_start(user=admin, path=path)
    assert str(caught.value).startswith(error)
    assert not LocalModel.objects.exists()


def test_a_file_that_is_not_gguf_is_refused(admin, tmp_path) -> None:
    notes = tmp_path / "notes.gguf"
    notes.write_text("these are notes, not a model\n")
    with pytest.raises(LocalModelRefused) as caught:
        local_model_start(user=admin, path=str(notes))
    assert str(caught.value) == f"{notes} is not a GGUF model: it does not begin with GGUF."


def test_two_files_of_one_name_are_refused(admin, gguf, tmp_path) -> None:
    local_model_start(user=admin, path=str(gguf))
    other = tmp_path / "elsewhere" / gguf.name
    other.parent.mkdir()
    other.write_bytes(b"GGUF")
    with pytest.raises(LocalModelRefused, match="Another file with the name qwen2.5-1.5b"):
        local_model_start(user=admin, path=str(other))


def test_a_local_route_serves_only_once_the_supervisor_says_ready(admin, gguf) -> None:
    route = Route("local", gguf.stem)
    with pytest.raises(RouteError, match=r"is not a local model here: an administrator starts"):
        check_available(route)
    model = local_model_start(user=admin, path=str(gguf))
    assert model.state == LocalModel.State.WAITING and model.route == f"local:{gguf.stem}"
    with pytest.raises(RouteError, match=r"is not running: it is waiting\.$"):
        check_available(route)
    with pytest.raises(ProviderError, match="is not running: it is waiting"):
        provider_build(route)

    _ready(model)
    check_available(route)
    provider = provider_build(route)
    # The OpenAI-compatible provider, at the supervisor's address, accounted as "local".
    assert provider.name == "local" and provider.label == f"local:{gguf.stem}"
    assert str(provider._client.base_url) == "http://127.0.0.1:8123/v1/"
    # A person may route a part to it from the form.
    routes = routes_for_run({"planner": model.route})
    assert routes["planner"] == route


def test_a_stopped_model_no_longer_serves_and_a_late_ready_does_not_revive_it(admin, gguf):
    model = local_model_start(user=admin, path=str(gguf))
    supervised_loading(model.pk, "http://127.0.0.1:8123/v1")
    local_model_stop(user=admin, model_id=model.pk)
    supervised_ready(model.pk)  # the supervisor's check raced the stop
    model.refresh_from_db()
    assert not model.wanted and model.state == LocalModel.State.LOADING
    with pytest.raises(LocalModelRefused, match="is not running: it is loading"):
        local_model_url(model.name)


def test_the_default_local_model_takes_every_part_of_new_runs(admin, gguf, tmp_path) -> None:
    before = configured_routes()
    model = local_model_start(user=admin, path=str(gguf), default_route=True)
    assert configured_routes() == before  # not while it loads
    _ready(model)
    routes = routes_for_run()
    assert {route.label for route in routes.values()} == {model.route}
    # Only one default: starting another as the default takes it over.
    other_path = tmp_path / "smollm2.gguf"
    other_path.write_bytes(b"GGUF")
    other = local_model_start(user=admin, path=str(other_path), default_route=True)
    _ready(other, port=8124)
    assert {route.label for route in routes_for_run().values()} == {other.route}
    local_model_stop(user=admin, model_id=other.pk)
    assert configured_routes() == before


def test_a_model_that_failed_is_started_afresh_when_asked_again(admin, gguf) -> None:
    model = local_model_start(user=admin, path=str(gguf))
    supervised_failed(model.pk, "the server exited with code 1: not a GGUF file")
    model.refresh_from_db()
    assert (model.state, model.wanted) == (LocalModel.State.FAILED, False)
    assert model.detail == "the server exited with code 1: not a GGUF file"
    again = local_model_start(user=admin, path=str(gguf))
    assert (again.pk, again.state, again.wanted, again.detail) == (
        model.pk,
        LocalModel.State.WAITING,
        True,
        "",
    )
