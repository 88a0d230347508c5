"""A template's webhook through a real Daphne: 20 POSTs at once give exactly 20 runs, each
waiting for its owner's approval; a wrong token gets 403 and a bad body 422 over HTTP too."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from planner_ui.core.status import RunStatus
from planner_ui.models import Run
from planner_ui.services.templates import template_save, template_webhook_set

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]

PLAN = {"steps": [{"id": "a", "title": "A", "instruction": "Weather in {city}", "role": "writer"}]}


def post(url: str, token: str, body: object) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_twenty_concurrent_webhook_posts_give_twenty_runs(daphne_url, make_user):
    owner = make_user("alice")
    saved = template_save(user=owner, name="Weather", task="Weather in {city}", plan=PLAN)
    token = template_webhook_set(saved.template, owner)
    url = f"{daphne_url}/api/v1/hooks/templates/{saved.template_id}"

    cities = [f"City{i}" for i in range(20)]
    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(lambda city: post(url, token, {"city": city}), cities))

    assert [code for code, _ in answers] == [201] * 20, answers
    runs = Run.objects.filter(template_version=saved)
    assert runs.count() == 20
    assert sorted(r.template_values["city"] for r in runs) == sorted(cities)
    assert {r.status for r in runs} == {RunStatus.AWAITING_PLAN_APPROVAL}
    assert sorted(body["run_id"] for _, body in answers) == sorted(r.pk for r in runs)
    assert all(body["url"].endswith(f"/runs/{body['run_id']}/") for _, body in answers)

    assert post(url, token + "x", {"city": "Oslo"}) == (
        403,
        {"detail": "This webhook does not open with that token."},
    )
    code, body = post(url, token, {"town": "Oslo"})
    assert code == 422
    assert [problem["loc"] for problem in body["detail"]] == [["body", "town"], ["body", "city"]]
    assert runs.count() == 20
