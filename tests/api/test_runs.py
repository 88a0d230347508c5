"""Runs over the API: created with the form's options and refused with the form's messages
(the field named), listed, read, steered; another user's run is a 404 everywhere; the rate
limit per token answers 429."""

from __future__ import annotations

import pytest

from planner_ui.core.status import RunStatus
from planner_ui.models import Run
from planner_ui.services.runs import run_approve_plan, run_plan
from tests.services.test_runs import drive

from .conftest import post

pytestmark = pytest.mark.django_db

TASK = "Research solar power and wind power, then compare them and write a summary."


def test_a_run_is_created_with_the_forms_options(api_client) -> None:
    api = api_client()
    response = post(
        api,
        "/api/v1/runs",
        {
            "task": TASK,
            "tool_policy": "auto",
            "auto_tools": ["send_email"],
            "budget_tokens": 50000,
            "replan_mode": "review",
            "max_replans": 1,
        },
    )
    assert response.status_code == 201, response.content
    body = response.json()
    run = Run.objects.get(pk=body["run_id"])
    assert run.owner == api.user and run.task == TASK
    assert (run.tool_policy, run.auto_tools, run.budget_tokens) == ("auto", ["send_email"], 50000)
    assert (run.replan_mode, run.max_replans) == ("review", 1)
    assert body["status"] == "planning" and body["task"] == TASK and body["steps"] == []


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({}, "task", "Field required"),
        ({"task": "   "}, "task", "Describe the task: it is empty."),
        ({"task": "x" * 10_001}, "task", "The task is 10001 characters long; at most 10000"),
        ({"task": "t", "budget_tokens": -5}, "budget_tokens", "positive number of tokens"),
        ({"task": "t", "tool_policy": "yolo"}, "tool_policy", "Unknown policy 'yolo'"),
        (
            {"task": "t", "tool_policy": "auto", "auto_tools": ["calculator"]},
            "auto_tools",
            "not one",
        ),
        ({"task": "t", "replan_mode": "sometimes"}, "replan_mode", "Unknown re-planning setting"),
        ({"task": "t", "max_replans": 11}, "max_replans", "between 0 and 10"),
        ({"task": "t", "routes": {"planner": "anthropic:"}}, "routes", "names no model"),
        ({"task": "t", "colour": "blue"}, "colour", "Extra inputs are not permitted"),
    ],
)
def test_bad_options_are_422_naming_the_field(api_client, body, field, message) -> None:
    response = post(api_client(), "/api/v1/runs", body)
    assert response.status_code == 422, response.content
    problems = response.json()["detail"]
    assert any(p["loc"][-1] == field and message in p["msg"] for p in problems), problems
    assert not Run.objects.exists()


def test_list_and_detail_show_only_your_runs(api_client) -> None:
    alice, bob = api_client("alice"), api_client("bob")
    mine = [post(alice, "/api/v1/runs", {"task": f"Task {n}"}).json()["run_id"] for n in range(3)]
    theirs = post(bob, "/api/v1/runs", {"task": "Bob's task"}).json()["run_id"]
    listed = alice.get("/api/v1/runs?limit=2").json()
    assert listed["count"] == 3 and [r["run_id"] for r in listed["items"]] == mine[::-1][:2]
    assert alice.get(f"/api/v1/runs/{mine[0]}").json()["task"] == "Task 0"
    assert alice.get(f"/api/v1/runs/{theirs}").status_code == 404


def test_another_users_run_is_a_404_on_every_endpoint(api_client) -> None:
    alice, bob = api_client("alice"), api_client("bob")
    run = Run.objects.create(owner=alice.user, task=TASK)
    run_plan(run.pk)
    base = f"/api/v1/runs/{run.pk}"
    reads = [
        "",
        "/events",
        "/usage",
        "/report",
        "/plan",
        "/plan/versions/1",
        "/plan/diff?base=1&other=1",
    ]
    for path in reads:
        assert alice.get(base + path).status_code == 200, path
        assert bob.get(base + path).status_code == 404, path
    writes = {
        "/cancel": {},
        "/pause": {},
        "/resume": {},
        "/plan/approve": {"version": 1},
        "/plan/edits": {"base_version": 1, "edit": {"op": "delete", "step_id": "x"}},
        "/plan/import": {"base_version": 1, "plan": {}},
        "/steps/x/retry": {},
        "/steps/x/fork": {},
    }
    for path, body in writes.items():
        assert post(bob, base + path, body).status_code == 404, path
    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL and run.plan_versions.count() == 1


def test_steering_a_run_from_the_api(api_client) -> None:
    api = api_client()
    run = Run.objects.create(owner=api.user, task=TASK)
    run_plan(run.pk)
    # Paused before its approval, it holds its steps once approved.
    assert post(api, f"/api/v1/runs/{run.pk}/pause").json()["paused"] is True
    run_approve_plan(run.pk)
    assert post(api, f"/api/v1/runs/{run.pk}/resume").json()["paused"] is False
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    # Over: a refusal says why, as on the page.
    refused = post(api, f"/api/v1/runs/{run.pk}/pause")
    assert refused.status_code == 409 and "cannot be paused" in refused.json()["detail"]
    step = run.steps.exclude(step_id="synthesis").last().step_id
    retried = post(api, f"/api/v1/runs/{run.pk}/steps/{step}/retry", {"downstream": False})
    assert retried.status_code == 200 and retried.json()["status"] == "running"
    drive(run)
    fork = post(api, f"/api/v1/runs/{run.pk}/steps/{step}/fork")
    assert fork.status_code == 201 and fork.json()["forked_from"] == run.pk
    assert fork.json()["status"] == "awaiting_plan_approval"
    cancelled = post(api, f"/api/v1/runs/{fork.json()['run_id']}/cancel")
    assert cancelled.json()["status"] == "cancelled"


def test_events_usage_and_report(api_client) -> None:
    api = api_client()
    run = Run.objects.create(owner=api.user, task=TASK)
    run_plan(run.pk)
    run_approve_plan(run.pk)
    drive(run)
    first = api.get(f"/api/v1/runs/{run.pk}/events?limit=5").json()
    assert [e["seq"] for e in first["events"]] == [1, 2, 3, 4, 5] and first["last_seq"] == 5
    rest = api.get(f"/api/v1/runs/{run.pk}/events?after=5&limit=1000").json()
    assert rest["events"][0]["seq"] == 6
    assert rest["events"][-1]["type"] == "run.status"
    assert rest["events"][-1]["payload"]["status"] == "succeeded"
    empty = api.get(f"/api/v1/runs/{run.pk}/events?after={rest['last_seq']}").json()
    assert empty == {"events": [], "last_seq": rest["last_seq"]}
    assert api.get(f"/api/v1/runs/{run.pk}/events?limit=0").status_code == 422
    usage = api.get(f"/api/v1/runs/{run.pk}/usage").json()
    assert {r["role"] for r in usage["roles"]} >= {"planner", "synthesizer"}
    report = api.get(f"/api/v1/runs/{run.pk}/report").json()
    assert report["status"] == "succeeded" and report["task"] == TASK


def test_each_token_has_a_rate_limit(api_client, settings) -> None:
    settings.AGENTSITE_API_RATE_PER_MINUTE = 3
    api, other = api_client(), api_client()
    assert [api.get("/api/v1/runs").status_code for _ in range(3)] == [200, 200, 200]
    limited = api.get("/api/v1/runs")
    assert limited.status_code == 429
    assert 0 < int(limited["Retry-After"]) <= 60
    # Per token: another token of the same person is not held back.
    assert other.get("/api/v1/runs").status_code == 200


def test_a_run_says_its_outcome_and_the_list_filters_by_it(api_client) -> None:
    from tests.services.test_outcomes import rejected_run

    api = api_client()
    warned = rejected_run(api.user)
    open_run = post(api, "/api/v1/runs", {"task": "Task still planning"}).json()["run_id"]
    detail = api.get(f"/api/v1/runs/{warned.pk}").json()
    assert (detail["status"], detail["outcome"]) == ("succeeded", "succeeded_with_warnings")
    assert detail["outcome_reason"].startswith("Call rejected (send_email in ")
    listed = api.get("/api/v1/runs?outcome=succeeded_with_warnings").json()["items"]
    assert [(r["run_id"], r["outcome"]) for r in listed] == [(warned.pk, "succeeded_with_warnings")]
    assert listed[0]["outcome_reason"] == warned.outcome_reason
    unfinished = api.get("/api/v1/runs?outcome=unfinished").json()["items"]
    assert [(r["run_id"], r["outcome"]) for r in unfinished] == [(open_run, None)]
    assert api.get("/api/v1/runs?outcome=succeeded").json()["items"] == []
    assert api.get("/api/v1/runs?outcome=green").status_code == 422


@pytest.mark.parametrize(
    "path", ["/api/v1/runs/", "/api/v1/runs/{run}/", "/api/v1/runs/{run}/events/"]
)
def test_paths_answer_with_a_trailing_slash_too(api_client, path) -> None:
    api = api_client()
    run = post(api, "/api/v1/runs/", {"task": "A task sent to the slashed path"})
    assert run.status_code == 201, run.content
    answer = api.get(path.format(run=run.json()["run_id"]))
    assert answer.status_code == 200 and answer["Content-Type"].startswith("application/json")


def test_the_openapi_document_names_each_path_once_without_a_slash(api_client) -> None:
    paths = api_client().get("/api/v1/openapi.json").json()["paths"]
    assert "/api/v1/runs" in paths and "/api/v1/runs/" not in paths
