"""The API's run list searches and filters like the history, and a run says where its plan
came from: the template, version and values, the past run it started from, and the past plans
its planner was given as examples."""

from __future__ import annotations

import pytest

from planner_ui.core.run_options import RunOptions
from planner_ui.services.runs import run_start_from
from planner_ui.services.templates import template_run, template_save_from_run
from tests.services.test_runs import planned
from tests.services.test_search import PAST, SIMILAR, UNRELATED, finished

pytestmark = [pytest.mark.database, pytest.mark.django_db]


def ids(api, query: str) -> list[int]:
    response = api.get(f"/api/v1/runs?{query}")
    assert response.status_code == 200, response.content
    return [item["run_id"] for item in response.json()["items"]]


def test_the_run_list_searches_and_filters(api_client) -> None:
    api = api_client()
    past = finished(api.user)
    other = planned(api.user, UNRELATED)
    assert ids(api, "q=paris") == [past.pk]
    assert ids(api, "q=compound+inter") == [other.pk]
    assert ids(api, "status=succeeded") == [past.pk]
    assert ids(api, f"model={past.planner_model}&q=weather") == [past.pk]
    day = past.created_at.date().isoformat()
    assert ids(api, f"since={day}&until={day}") == [other.pk, past.pk]
    assert ids(api, "until=2000-01-01") == []
    assert api.get("/api/v1/runs?status=green").status_code == 422
    assert api.get("/api/v1/runs?since=yesterday").status_code == 422
    assert ids(api_client("bob"), "q=paris") == []


def test_a_run_says_its_template_its_source_and_its_examples(api_client) -> None:
    api = api_client()
    past = finished(api.user)
    saved = template_save_from_run(
        user=api.user,
        version=past.plan_versions.get(number=1),
        name="Weather",
        replace=[("Paris", "city")],
    )
    filled = template_run(version=saved, user=api.user, values={"city": "Oslo"})
    started = run_start_from(owner=api.user, options=RunOptions(task=SIMILAR), source=past)
    examples = planned(api.user, SIMILAR)

    body = api.get(f"/api/v1/runs/{filled.pk}").json()
    assert body["template"] == {
        "id": saved.template.pk,
        "name": "Weather",
        "version": 1,
        "values": {"city": "Oslo"},
        "trigger": "form",
    }
    assert body["started_from"] is None and body["plan_examples"] == []
    assert api.get(f"/api/v1/runs/{started.pk}").json()["started_from"] == past.pk
    body = api.get(f"/api/v1/runs/{examples.pk}").json()
    assert body["template"] is None
    assert {(e["kind"], e["id"]) for e in body["plan_examples"]} == {
        ("template", saved.template.pk),
        ("run", past.pk),
    }
    assert ids(api, f"template={saved.template.pk}") == [filled.pk]
    listed = api.get(f"/api/v1/runs?template={saved.template.pk}").json()["items"]
    assert listed[0]["template_id"] == saved.template.pk
    assert PAST in api.get(f"/api/v1/runs/{past.pk}").json()["task"]
