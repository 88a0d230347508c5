"""A shared template lends its plan, not its owner's settings: another user reading it over the
API saw the values the owner's schedule runs with, its last error, the webhook's mapping and
whether it is on, and the policy of the owner's triggered runs. The page showed none of it."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from planner_ui.models import PlanTemplate
from planner_ui.services.templates import template_share
from tests.api.conftest import api_client, post  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

PRIVATE = "Quokkaville"
TEMPLATE = {
    "name": "Weather",
    "task": "Weather in {city}",
    "plan": {
        "steps": [{"id": "look", "title": "Look up {city}", "instruction": "x", "role": "writer"}]
    },
}
OWNER_ONLY = ("webhook", "webhook_mapping", "trigger_policy", "schedule")


@pytest.fixture
def shared(api_client) -> tuple[Client, int]:  # noqa: F811
    """Alice's template with her schedule, mapping and policy set, shared by staff."""
    alice = api_client("alice")
    template_id = post(alice, "/api/v1/templates", TEMPLATE).json()["template_id"]
    base = f"/api/v1/templates/{template_id}"
    for path, body in (
        ("/schedule", {"schedule": "every 2 hours", "values": {"city": PRIVATE}}),
        ("/webhook-mapping", {"mapping": {"city": f"$.{PRIVATE}.city"}}),
        ("/trigger-policy", {"tool_policy": "dry_run", "auto_tools": []}),
    ):
        response = alice.put(base + path, body, content_type="application/json")
        assert response.status_code == 200, response.content
    assert post(alice, base + "/webhook").status_code == 201
    staff = get_user_model().objects.create_user("root", is_staff=True)
    template_share(PlanTemplate.objects.get(pk=template_id), staff, True)
    return alice, template_id


@pytest.mark.parametrize("who", ["bob", "root"])
def test_others_read_it_without_the_owners_settings(api_client, shared, who) -> None:  # noqa: F811
    _, template_id = shared
    reader = api_client(who)
    for url in (f"/api/v1/templates/{template_id}", "/api/v1/templates"):
        response = reader.get(url)
        assert response.status_code == 200
        assert PRIVATE not in response.content.decode(), url
    read = reader.get(f"/api/v1/templates/{template_id}").json()
    assert not read["mine"] and read["latest"]["task"] == TEMPLATE["task"]
    assert {field: read[field] for field in OWNER_ONLY} == dict.fromkeys(OWNER_ONLY)


def test_control_the_owner_reads_her_settings(shared) -> None:
    alice, template_id = shared
    read = alice.get(f"/api/v1/templates/{template_id}").json()
    assert read["schedule"]["values"] == {"city": PRIVATE}
    assert read["webhook"] is True and read["trigger_policy"]["tool_policy"] == "dry_run"
    assert read["webhook_mapping"] == {"city": f"$.{PRIVATE}.city"}


def test_the_page_shows_others_none_of_them_either(api_client, shared) -> None:  # noqa: F811
    _, template_id = shared
    bob = Client()
    bob.force_login(api_client("bob").user)
    page = bob.get(reverse("template_detail", args=[template_id])).content.decode()
    assert "Look up {city}" in page and PRIVATE not in page
