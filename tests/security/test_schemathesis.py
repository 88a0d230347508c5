"""Schemathesis against /api/v1/openapi.json, as a normal user with an API token: whatever it
sends (valid and invalid bodies, paths and queries, extreme numbers, deep JSON), the API
answers without a server error, and every documented answer matches the document.

The app runs in this process through WSGI, on the test's transaction: runs it creates are never
committed, so no planning task is ever sent. Examples per operation are few (the operations are
about twenty), so the whole run stays around a minute on this 2-core machine."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
)

from planner_ui.models import Approval
from planner_ui.services.runs import run_approve_plan
from planner_ui.services.templates import template_save
from planner_ui.services.tokens import token_create
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    content_type_conformance,
    response_headers_conformance,
]


@pytest.fixture
def api_schema() -> Iterator[Any]:
    # Django closes the database connection at the end of each request; the test's
    # transaction lives on it, so keep it open (as Django's own test client does).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application())
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


schema = schemathesis.pytest.from_fixture("api_schema")


@dataclass
class Mallory:
    token: str
    # What exists, by path parameter: a generated number lands on one of these.
    ids: dict[str, list[int]]


@pytest.fixture
def mallory(make_user: Any, settings: Any) -> Mallory:
    """A normal user's token, a run waiting for plan approval, one waiting at a gate and a
    plan template."""
    settings.AGENTSITE_API_RATE_PER_MINUTE = 1_000_000
    user = make_user("mallory")
    waiting = planned(user, "Research the history of tea, then write a short summary")
    gated = planned(user, "Write a two-line status note and email it to bob@example.com")
    run_approve_plan(gated.pk)
    drive(gated)
    approvals = list(
        gated.approvals.filter(state=Approval.State.PENDING).values_list("pk", flat=True)
    )
    assert approvals
    _, raw = token_create(user=user, name="schemathesis")
    template = template_save(
        user=user,
        name="Tea",
        task="Research the history of {drink}",
        plan={
            "steps": [{"id": "a", "title": "A", "instruction": "About {drink}", "role": "writer"}]
        },
    ).template
    ids = {
        "run_id": [waiting.pk, gated.pk],
        "approval_id": approvals,
        "number": [1],
        "template_id": [template.pk],
    }
    return Mallory(raw, ids)


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_api_answers_every_request_without_a_server_error(case: Any, mallory: Mallory) -> None:
    # Random ids would almost always miss (a 404 before any code that reads the body runs):
    # three numbers in four are turned into ids that exist, the fourth is sent as drawn.
    for name, value in (case.path_parameters or {}).items():
        if name in mallory.ids and isinstance(value, int) and value % 4:
            known = mallory.ids[name]
            case.path_parameters[name] = known[value % len(known)]
    case.call_and_validate(headers={"Authorization": f"Bearer {mallory.token}"}, checks=CHECKS)
