"""Templates over the API: save (as JSON or from a run), read, run with values, list the runs;
the webhook opens only with its own secret (403), names bad values (422) and approves nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from planner_ui.core.status import RunStatus
from planner_ui.models import PlanTemplate, Run
from planner_ui.services.runs import run_plan

from .conftest import post

pytestmark = pytest.mark.django_db

PLAN = {
    "goal": "Weather for {city}",
    "steps": [
        {
            "id": "look",
            "title": "Look up {city}",
            "instruction": "Weather in {city}.",
            "role": "writer",
        }
    ],
}
TEMPLATE = {
    "name": "Weather",
    "task": "Weather in {city} for {days} days",
    "plan": PLAN,
    "parameters": [{"name": "days", "type": "integer", "default": "3", "maximum": 14}],
}


@pytest.fixture
def alice_api(api_client):
    return api_client("alice")


@pytest.fixture
def weather(alice_api) -> dict:
    response = post(alice_api, "/api/v1/templates", TEMPLATE)
    assert response.status_code == 201, response.content
    return response.json()


def test_save_as_json_then_read_and_list(alice_api, weather) -> None:
    assert weather["name"] == "Weather" and weather["mine"] and weather["versions"] == [1]
    assert [p["name"] for p in weather["latest"]["parameters"]] == ["city", "days"]
    assert weather["latest"]["note"] == "imported as JSON"
    again = post(alice_api, "/api/v1/templates", {**TEMPLATE, "note": "again"}).json()
    assert again["versions"] == [1, 2] and again["template_id"] == weather["template_id"]
    listed = alice_api.get("/api/v1/templates").json()
    assert [t["name"] for t in listed] == ["Weather"]
    read = alice_api.get(f"/api/v1/templates/{weather['template_id']}").json()
    assert read["latest"]["number"] == 2


def test_a_bad_template_is_422_naming_the_parameter(alice_api) -> None:
    body = {**TEMPLATE, "parameters": [{"name": "mood", "type": "text"}]}
    response = post(alice_api, "/api/v1/templates", body)
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {
            "loc": ["body", "values", "mood"],
            "msg": "no text uses it: put {mood} in the task or a step's instruction",
            "type": "value_error",
        }
    ]
    assert not PlanTemplate.objects.exists()


def test_run_with_values_and_list_the_runs(alice_api, weather) -> None:
    url = f"/api/v1/templates/{weather['template_id']}/runs"
    response = post(alice_api, url, {"values": {"city": "Lyon", "days": 5}})
    assert response.status_code == 201, response.content
    run = response.json()
    assert run["status"] == RunStatus.AWAITING_PLAN_APPROVAL
    assert run["task"] == "Weather in Lyon for 5 days" and run["planner_model"] == ""
    listed = alice_api.get(url).json()
    assert [(r["run_id"], r["values"], r["version"], r["trigger"]) for r in listed] == [
        (run["run_id"], {"city": "Lyon", "days": "5"}, 1, "api")
    ]
    assert listed[0]["url"] == f"http://testserver/runs/{run['run_id']}/"
    bad = post(alice_api, url, {"values": {"days": 30, "city": ["x"]}})
    assert bad.status_code == 422
    assert bad.json()["detail"] == [
        {
            "loc": ["body", "values", "city"],
            "msg": "give text or a number, not list",
            "type": "value_error",
        },
        {"loc": ["body", "values", "days"], "msg": "it must be at most 14", "type": "value_error"},
    ]


def test_save_from_a_run_turns_text_into_a_parameter(alice_api) -> None:
    run = Run.objects.create(owner=alice_api.user, task="Research the weather in Paris")
    run_plan(run.pk)
    body = {"name": "From run", "replace": [{"text": "Paris", "parameter": "city"}]}
    response = post(alice_api, f"/api/v1/runs/{run.pk}/plan/template", body)
    assert response.status_code == 201, response.content
    latest = response.json()["latest"]
    assert latest["task"] == "Research the weather in {city}" and latest["source_run"] == run.pk
    assert latest["parameters"][0]["default"] == "Paris"


def test_others_templates_are_404(api_client, weather) -> None:
    bob = api_client("bob")
    template_id = weather["template_id"]
    assert bob.get(f"/api/v1/templates/{template_id}").status_code == 404
    assert post(bob, f"/api/v1/templates/{template_id}/runs", {}).status_code == 404
    assert post(bob, f"/api/v1/templates/{template_id}/webhook").status_code == 404
    assert bob.get("/api/v1/templates").json() == []


def hook(template_id: int, body: object, token: str | None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(headers=headers).post(
        f"/api/v1/hooks/templates/{template_id}", body, content_type="application/json"
    )


def test_the_webhook_opens_with_its_secret_only(alice_api, weather) -> None:
    template_id = weather["template_id"]
    made = post(alice_api, f"/api/v1/templates/{template_id}/webhook")
    assert made.status_code == 201
    token, url = made.json()["token"], made.json()["url"]
    assert url == f"http://testserver/api/v1/hooks/templates/{template_id}"
    response = hook(template_id, {"city": "Oslo"}, token)
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["run_id"])
    assert response.json()["url"] == f"http://testserver/runs/{run.pk}/"
    # A trigger approves nothing: the plan waits for its owner.
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL and run.owner == alice_api.user
    assert run.template_values == {"city": "Oslo", "days": "3"}
    assert run.template_trigger == Run.Trigger.WEBHOOK
    refused = "This webhook does not open with that token."
    for template, secret in [
        (template_id, token[:-1] + "x"),
        (template_id, None),
        (template_id, alice_api.token),  # a personal token is not the webhook's
        (template_id + 1, token),
    ]:
        response = hook(template, {"city": "Oslo"}, secret)
        assert response.status_code == 403 and response.json() == {"detail": refused}
    # A new secret replaces the old; turned off, none opens it.
    newer = post(alice_api, f"/api/v1/templates/{template_id}/webhook").json()["token"]
    assert hook(template_id, {"city": "Oslo"}, token).status_code == 403
    assert alice_api.delete(f"/api/v1/templates/{template_id}/webhook").status_code == 204
    assert hook(template_id, {"city": "Oslo"}, newer).status_code == 403
    assert Run.objects.count() == 1


def test_the_webhook_names_bad_values_with_422(alice_api, weather) -> None:
    template_id = weather["template_id"]
    token = post(alice_api, f"/api/v1/templates/{template_id}/webhook").json()["token"]
    response = hook(template_id, {"days": "many"}, token)
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {"loc": ["body", "city"], "msg": "a value is required", "type": "value_error"},
        {"loc": ["body", "days"], "msg": "it is not a number: 'many'", "type": "value_error"},
    ]
    assert hook(template_id, ["Oslo"], token).status_code == 422
    not_json = Client(headers={"Authorization": f"Bearer {token}"}).post(
        f"/api/v1/hooks/templates/{template_id}", "{city", content_type="application/json"
    )
    assert not_json.status_code == 422
    assert not Run.objects.exists()


def test_the_webhook_is_rate_limited(alice_api, weather, settings) -> None:
    settings.AGENTSITE_WEBHOOK_RATE_PER_MINUTE = 2
    template_id = weather["template_id"]
    token = post(alice_api, f"/api/v1/templates/{template_id}/webhook").json()["token"]
    codes = [hook(template_id, {"city": "Rome"}, token).status_code for _ in range(3)]
    assert codes[-1] == 429 and Run.objects.count() == codes.count(201)


def test_the_trigger_policy_is_set_over_the_api(alice_api, weather) -> None:
    assert weather["trigger_policy"] == {"tool_policy": "ask", "auto_tools": []}
    url = f"/api/v1/templates/{weather['template_id']}/trigger-policy"
    body = {"tool_policy": "dry_run", "auto_tools": []}
    response = alice_api.put(url, body, content_type="application/json")
    assert response.status_code == 200
    assert response.json()["trigger_policy"] == body
    bad = alice_api.put(url, {"tool_policy": "yolo"}, content_type="application/json")
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["msg"].startswith("Unknown policy 'yolo'")


def test_the_schedule_is_set_over_the_api(alice_api, weather) -> None:
    url = f"/api/v1/templates/{weather['template_id']}/schedule"
    body = {"schedule": "every 2 hours", "values": {"city": "Rome"}}
    response = alice_api.put(url, body, content_type="application/json")
    assert response.status_code == 200
    schedule = response.json()["schedule"]
    assert (schedule["schedule"], schedule["values"], schedule["error"]) == (
        "every 2 hours",
        {"city": "Rome"},
        "",
    )
    assert schedule["next_run_at"]
    bad = alice_api.put(url, {"schedule": "every 2 hours"}, content_type="application/json")
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["loc"] == ["body", "values", "city"]
    bad = alice_api.put(url, {"schedule": "often"}, content_type="application/json")
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["loc"] == ["body", "payload", "schedule"]


def test_the_webhook_reads_another_systems_json_through_the_mapping(alice_api, weather) -> None:
    template_id = weather["template_id"]
    token = post(alice_api, f"/api/v1/templates/{template_id}/webhook").json()["token"]
    path = f"/api/v1/templates/{template_id}/webhook-mapping"
    mapping = {"city": "$.ticket.location['city name']", "days": "$.ticket.days[0]"}
    response = alice_api.put(path, {"mapping": mapping}, content_type="application/json")
    assert response.status_code == 200, response.content
    assert response.json()["webhook_mapping"] == mapping

    body = {"ticket": {"location": {"city name": "Oslo"}, "days": [5, 6]}, "other": "ignored"}
    response = hook(template_id, body, token)
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["run_id"])
    assert run.template_values == {"city": "Oslo", "days": "5"}
    # A path that finds nothing leaves the value to its default, or says it is required.
    response = hook(template_id, {"ticket": {"location": {"city": "Oslo"}}}, token)
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {"loc": ["body", "city"], "msg": "a value is required", "type": "value_error"}
    ]
    response = hook(template_id, {"ticket": {"location": {"city name": {"a": 1}}}}, token)
    assert response.status_code == 422  # an object is no value

    for bad, msg in [
        ({"mood": "$.x"}, "mood: not a parameter of this template; its parameters: city, days"),
        ({"city": "ticket.city"}, "does not start at the body"),
    ]:
        response = alice_api.put(path, {"mapping": bad}, content_type="application/json")
        assert response.status_code == 422
        assert msg in response.json()["detail"][0]["msg"]
    emptied = alice_api.put(path, {"mapping": {}}, content_type="application/json")
    assert emptied.json()["webhook_mapping"] == {}
    assert hook(template_id, {"city": "Lyon"}, token).status_code == 201  # the body again
