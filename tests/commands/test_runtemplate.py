"""`manage.py runtemplate NAME --param k=v` starts a run from a template, refuses bad values
naming the parameter, and finds a shared template by name."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from planner_ui.core.status import RunStatus
from planner_ui.models import Run
from planner_ui.services.templates import template_save
from tests.conftest import child_env

pytestmark = pytest.mark.django_db

PLAN = {
    "steps": [
        {
            "id": "a",
            "title": "Weather in {city}",
            "instruction": "Weather in {city}.",
            "role": "writer",
        }
    ]
}


@pytest.fixture
def weather(make_user):
    owner = make_user("demo")
    return template_save(
        user=owner,
        name="City weather",
        task="Weather in {city} for {days} days",
        plan=PLAN,
        parameters=[{"name": "days", "type": "integer", "default": "3", "minimum": 1}],
    )


def runtemplate(*args: str) -> str:
    out = StringIO()
    call_command("runtemplate", *args, stdout=out)
    return out.getvalue()


def test_no_wait_submits_and_prints_the_run(weather) -> None:
    out = runtemplate("City weather", "--param", "city=Lyon", "--no-wait", "--json")
    run = Run.objects.get()
    assert json.loads(out) == {
        "run_id": run.pk,
        "url": f"/runs/{run.pk}/",
        "status": RunStatus.AWAITING_PLAN_APPROVAL,
    }
    assert run.task == "Weather in Lyon for 3 days"
    assert run.template_version == weather and run.template_values == {"city": "Lyon", "days": "3"}
    assert run.template_trigger == Run.Trigger.COMMAND
    assert run.steps.get(step_id="a").title == "Weather in Lyon"


def test_bad_values_are_refused_naming_each_parameter(weather) -> None:
    with pytest.raises(CommandError) as exc:
        runtemplate("City weather", "--param", "days=0", "--param", "mood=x", "--no-wait")
    assert str(exc.value) == (
        "Refused values:\n"
        "  --param mood: this template has no such parameter; its parameters: city, days\n"
        "  --param city: a value is required\n"
        "  --param days: it must be at least 1"
    )
    with pytest.raises(CommandError, match="--param 'city': write NAME=VALUE"):
        runtemplate("City weather", "--param", "city", "--no-wait")
    assert not Run.objects.exists()


def test_unknown_names_and_versions_say_so(weather, make_user) -> None:
    with pytest.raises(CommandError, match="No template 'Nope' for demo: no template you may"):
        runtemplate("Nope", "--no-wait")
    with pytest.raises(CommandError, match="Template 'City weather' has no version 7."):
        runtemplate("City weather", "--template-version", "7", "--no-wait")
    # Another user finds it only once it is shared.
    make_user("bob")
    with pytest.raises(CommandError, match="No template 'City weather' for bob"):
        runtemplate("City weather", "--user", "bob", "--param", "city=Oslo", "--no-wait")
    weather.template.shared = True
    weather.template.save()
    runtemplate("City weather", "--user", "bob", "--param", "city=Oslo", "--no-wait")
    assert Run.objects.get().owner.username == "bob"


@pytest.mark.stack
@pytest.mark.django_db(transaction=True)
def test_runtemplate_waits_for_the_run_and_prints_its_outcome(celery_worker_process, weather):
    """Through a real worker: the command approves the filled plan, as runtask approves its."""
    result = subprocess.run(
        [sys.executable, "manage.py", "runtemplate", "City weather", "--param", "city=Lyon"],
        cwd=settings.BASE_DIR,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    run = Run.objects.get()
    assert result.stdout.startswith(f"Run {run.pk}: succeeded in "), result.stdout
    assert f"Run {run.pk} submitted from template City weather v1." in result.stderr
    assert run.status == RunStatus.SUCCEEDED and run.planner_model == ""
    assert run.template_values == {"city": "Lyon", "days": "3"}
