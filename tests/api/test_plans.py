"""The plan over the API: read, edit against a version (a stale edit is a 409 with the current
plan), bad edits and imports a 422 naming the problem, diff, approve an exact version."""

from __future__ import annotations

import pytest

from planner_ui.models import Run
from planner_ui.services.runs import run_plan

from .conftest import post

pytestmark = pytest.mark.django_db

TASK = "Research tea, coffee and mate, then write a short summary"


@pytest.fixture
def api_and_run(api_client):
    api = api_client()
    run = Run.objects.create(owner=api.user, task=TASK)
    run_plan(run.pk)
    return api, run


def test_read_edit_and_diff(api_and_run) -> None:
    api, run = api_and_run
    plan = api.get(f"/api/v1/runs/{run.pk}/plan").json()
    assert plan["number"] == 1 and plan["author"] == "planner" and not plan["approved"]
    first = plan["plan"]["steps"][0]["id"]
    edited = post(
        api,
        f"/api/v1/runs/{run.pk}/plan/edits",
        {"base_version": 1, "edit": {"op": "update", "step_id": first, "instruction": "Be brief."}},
    )
    assert edited.status_code == 201, edited.content
    assert edited.json()["number"] == 2 and edited.json()["author"] == "person"
    assert run.steps.get(step_id=first).instruction == "Be brief."
    diff = api.get(f"/api/v1/runs/{run.pk}/plan/diff?base=1&other=2").json()
    assert diff["changed"][first]["instruction"]["new"] == "Be brief."
    assert diff["added"] == [] and diff["removed"] == []
    assert api.get(f"/api/v1/runs/{run.pk}/plan/versions/1").json()["number"] == 1
    assert api.get(f"/api/v1/runs/{run.pk}/plan/versions/9").status_code == 404


def test_a_stale_edit_is_a_409_with_the_current_plan(api_and_run) -> None:
    api, run = api_and_run
    first = run.steps.first().step_id
    edit = {"op": "update", "step_id": first, "title": "One"}
    assert (
        post(
            api, f"/api/v1/runs/{run.pk}/plan/edits", {"base_version": 1, "edit": edit}
        ).status_code
        == 201
    )
    stale = post(
        api,
        f"/api/v1/runs/{run.pk}/plan/edits",
        {"base_version": 1, "edit": {**edit, "title": "Two"}},
    )
    assert stale.status_code == 409
    body = stale.json()
    assert "you edited version 1, but version 2 is the current one" in body["detail"]
    assert body["current_version"] == 2 and body["current_plan"]["number"] == 2
    assert run.plan_versions.count() == 2 and run.steps.get(step_id=first).title == "One"


@pytest.mark.parametrize(
    ("edit", "loc", "message"),
    [
        ({"op": "update", "step_id": "ghost", "title": "x"}, "edit", "ghost"),
        ({"op": "update", "tools": ["rm_rf"]}, "step_id", "Field required"),
        (
            {"op": "add", "title": "t", "instruction": "i", "role": "writer", "tools": ["rm_rf"]},
            "edit",
            "rm_rf",
        ),
        ({"op": "teleport", "step_id": "a"}, "edit", "does not match any of the expected tags"),
        (
            {"op": "update", "step_id": "a", "instruction": "x" * 4001},
            "instruction",
            "at most 4000",
        ),
    ],
)
def test_bad_edits_are_422_and_change_nothing(api_and_run, edit, loc, message) -> None:
    api, run = api_and_run
    if edit.get("step_id") == "a":
        edit["step_id"] = run.steps.first().step_id
    response = post(api, f"/api/v1/runs/{run.pk}/plan/edits", {"base_version": 1, "edit": edit})
    assert response.status_code == 422, response.content
    problems = response.json()["detail"]
    assert any(loc in p["loc"] and message in p["msg"] for p in problems), problems
    assert run.plan_versions.count() == 1


def test_a_cycle_is_refused_with_the_loop_named(api_and_run) -> None:
    api, run = api_and_run
    steps = list(run.steps.exclude(step_id="synthesis"))
    first, later = (
        steps[0].step_id,
        next(s.step_id for s in steps if steps[0].step_id in s.depends_on),
    )
    response = post(
        api,
        f"/api/v1/runs/{run.pk}/plan/edits",
        {
            "base_version": 1,
            "edit": {"op": "add_dependency", "step_id": first, "depends_on": later},
        },
    )
    assert response.status_code == 422
    assert "cycle" in response.json()["detail"][0]["msg"]


def test_import_validates_like_the_editor(api_and_run) -> None:
    api, run = api_and_run
    plan = api.get(f"/api/v1/runs/{run.pk}/plan").json()["plan"]
    plan["steps"] = plan["steps"][:1]
    ok = post(api, f"/api/v1/runs/{run.pk}/plan/import", {"base_version": 1, "plan": plan})
    assert ok.status_code == 201 and len(ok.json()["plan"]["steps"]) == 1
    bad = {**plan, "steps": [{**plan["steps"][0], "depends_on": ["nowhere"]}]}
    refused = post(api, f"/api/v1/runs/{run.pk}/plan/import", {"base_version": 2, "plan": bad})
    assert refused.status_code == 422 and "nowhere" in refused.json()["detail"][0]["msg"]
    assert run.plan_versions.count() == 2


def test_approve_runs_exactly_the_version_you_name(api_and_run) -> None:
    api, run = api_and_run
    first = run.steps.first().step_id
    post(
        api,
        f"/api/v1/runs/{run.pk}/plan/edits",
        {"base_version": 1, "edit": {"op": "update", "step_id": first, "title": "T"}},
    )
    stale = post(api, f"/api/v1/runs/{run.pk}/plan/approve", {"version": 1})
    assert stale.status_code == 409 and stale.json()["current_version"] == 2
    run.refresh_from_db()
    assert run.status == "awaiting_plan_approval"
    approved = post(api, f"/api/v1/runs/{run.pk}/plan/approve", {"version": 2})
    assert approved.status_code == 200 and approved.json()["status"] == "running"
    assert api.get(f"/api/v1/runs/{run.pk}/plan").json()["approved"] is True
    again = post(api, f"/api/v1/runs/{run.pk}/plan/approve", {"version": 2})
    assert again.status_code == 409 and "cannot be approved now" in again.json()["detail"]
