"""A run driven through the API alone, on the real stack (Daphne, Redis, a Celery worker
process): create it, read and edit its plan, approve exactly the edited version, follow its
events to the end, and read its report; the edited instruction reached the executor."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from planner_ui.services.tokens import token_create

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]


class Api:
    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base + "/api/v1", token

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


def test_create_edit_approve_and_follow_a_run_through_the_api(
    daphne_url, celery_worker_process, make_user
) -> None:
    _, token = token_create(user=make_user("alice"), name="e2e")
    api = Api(daphne_url, token)
    status, run = api.call(
        "POST", "/runs", {"task": "Research tea and coffee, then write a short summary"}
    )
    assert status == 201, run
    path = f"/runs/{run['run_id']}"

    deadline = time.monotonic() + 60
    while run["status"] == "planning" and time.monotonic() < deadline:
        time.sleep(0.3)
        run = api.call("GET", path)[1]
    assert run["status"] == "awaiting_plan_approval", run

    _, plan = api.call("GET", path + "/plan")
    last = plan["plan"]["steps"][-1]["id"]
    status, edited = api.call(
        "POST",
        path + "/plan/edits",
        {
            "base_version": plan["number"],
            "edit": {
                "op": "update",
                "step_id": last,
                "instruction": "Write a haiku about tea and coffee.",
            },
        },
    )
    assert status == 201, edited
    assert api.call("POST", path + "/plan/approve", {"version": plan["number"]})[0] == 409
    status, approved = api.call("POST", path + "/plan/approve", {"version": edited["number"]})
    assert status == 200 and approved["status"] == "running", approved

    seen: list[dict] = []
    after, deadline = 0, time.monotonic() + 120
    while time.monotonic() < deadline:
        _, page = api.call("GET", f"{path}/events?after={after}")
        seen += page["events"]
        after = page["last_seq"]
        if any(e["type"] == "run.status" and e["payload"]["status"] == "succeeded" for e in seen):
            break
        time.sleep(0.3)
    assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1)), "events lost or repeated"
    types = [e["type"] for e in seen]
    assert (
        types.index("plan.approved") < types.index("step.started") < types.index("step.succeeded")
    )

    _, report = api.call("GET", path + "/report")
    assert report["status"] == "succeeded"
    _, final = api.call("GET", path)
    step = next(s for s in final["steps"] if s["id"] == last)
    assert "haiku" in step["output"].lower()
    assert final["plan_version"] == edited["number"]
