"""Suites and experiments over the API: stored, started, read in the shape the command and the
export give; refused with the reason; another user's are a 404."""

from __future__ import annotations

import pytest

from planner_ui.core.evaluation import shipped_suites
from planner_ui.models import EvaluationSuite, Experiment

from .conftest import post

pytestmark = pytest.mark.django_db


def test_a_suite_is_stored_read_and_replaced(api_client) -> None:
    api = api_client()
    text = shipped_suites()["sequential"]
    response = post(api, "/api/v1/suites", {"content": text})
    assert response.status_code == 201, response.content
    made = response.json()
    assert (made["name"], made["tasks"], made["content"]) == ("sequential", 4, text)
    listed = api.get("/api/v1/suites").json()
    assert [s["suite_id"] for s in listed] == [made["suite_id"]]
    renamed = text.replace("name: sequential", "name: chain")
    response = api.put(
        f"/api/v1/suites/{made['suite_id']}", {"content": renamed}, content_type="application/json"
    )
    assert response.json()["name"] == "chain"


def test_a_bad_suite_is_refused_with_the_reason(api_client) -> None:
    response = post(api_client(), "/api/v1/suites", {"content": "name: x\ntasks: []"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["msg"] == (
        "tasks: List should have at least 1 item after validation, not 0"
    )
    assert not EvaluationSuite.objects.exists()


def test_an_experiment_starts_from_a_stored_or_an_inline_suite(api_client) -> None:
    api = api_client()
    suite_id = post(api, "/api/v1/suites", {"content": shipped_suites()["parallel"]}).json()[
        "suite_id"
    ]
    response = post(api, "/api/v1/experiments", {"suite_id": suite_id, "repeat": 2})
    assert response.status_code == 201, response.content
    started = response.json()
    assert (started["suite"], started["status"], started["total"]) == ("parallel", "running", 16)
    assert [arm["arm"] for arm in started["arms"]] == ["agent", "plan"]
    # The parallel suite has a judge check: by default, the synthesizer's route judges it.
    assert started["judge"] == "offline:offline-v1"
    assert started["arms"][0]["judging"] == {"model_calls": 0, "tokens": 0, "cost_usd": "0"}
    inline = post(
        api,
        "/api/v1/experiments",
        {"suite": shipped_suites()["sequential"], "arms": ["plan", "small=plan,executor=offline"]},
    ).json()
    assert [arm["arm"] for arm in inline["arms"]] == ["plan", "small"]
    again = api.get(f"/api/v1/experiments/{inline['experiment']}").json()
    assert again["experiment"] == inline["experiment"] and again["total"] == 8
    assert [e["experiment_id"] for e in api.get("/api/v1/experiments").json()] == [
        inline["experiment"],
        started["experiment"],
    ]
    cancelled = post(api, f"/api/v1/experiments/{inline['experiment']}/cancel").json()
    assert cancelled["status"] == "cancelled"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "Give either suite_id or suite."),
        ({"suite": "name: x\ntasks: [{id: a, task: t}]", "arms": ["robot"]}, "Arm 'robot'"),
    ],
)
def test_a_bad_experiment_is_refused_with_the_reason(api_client, body, message) -> None:
    response = post(api_client(), "/api/v1/experiments", body)
    assert response.status_code == 422
    assert response.json()["detail"][0]["msg"].startswith(message)
    assert not Experiment.objects.exists()


def test_another_users_suites_and_experiments_are_not_found(api_client) -> None:
    bob = api_client("bob")
    suite_id = post(bob, "/api/v1/suites", {"content": shipped_suites()["parallel"]}).json()[
        "suite_id"
    ]
    experiment = post(bob, "/api/v1/experiments", {"suite_id": suite_id}).json()["experiment"]
    alice = api_client("alice")
    assert alice.get(f"/api/v1/suites/{suite_id}").status_code == 404
    assert alice.get(f"/api/v1/experiments/{experiment}").status_code == 404
    assert post(alice, f"/api/v1/experiments/{experiment}/cancel").status_code == 404
    assert post(alice, "/api/v1/experiments", {"suite_id": suite_id}).status_code == 404
    assert alice.get("/api/v1/experiments").json() == []


def test_an_experiment_is_paused_and_resumed(api_client) -> None:
    api = api_client()
    started = post(
        api, "/api/v1/experiments", {"suite": shipped_suites()["parallel"], "arms": ["agent"]}
    ).json()
    paused = post(api, f"/api/v1/experiments/{started['experiment']}/pause")
    assert paused.status_code == 200 and paused.json()["paused"] is True
    again = post(api, f"/api/v1/experiments/{started['experiment']}/pause")
    assert again.status_code == 409
    assert again.json()["detail"] == "This experiment is paused already, so it cannot be paused."
    resumed = post(api, f"/api/v1/experiments/{started['experiment']}/resume").json()
    assert resumed["paused"] is False


def test_an_experiment_names_its_judge_or_is_refused_with_the_reason(api_client) -> None:
    api = api_client()
    text = shipped_suites()["parallel"]
    chosen = post(api, "/api/v1/experiments", {"suite": text, "judge": "offline"})
    assert chosen.status_code == 201 and chosen.json()["judge"] == "offline:offline-v1"
    refused = post(api, "/api/v1/experiments", {"suite": text, "judge": "offline#prompted"})
    assert refused.status_code == 422
    assert "Judge: A tool mode is for OpenAI-compatible servers" in str(refused.json())
