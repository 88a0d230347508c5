"""Each input that answered 500 (issue 30, item 5) gets a clear refusal instead, and a budget
out of range that is already stored breaks no page."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from planner_ui.core.bounds import MAX_JSON_DEPTH
from planner_ui.models import Approval, Run
from planner_ui.services.runs import run_approve_plan
from tests.api.conftest import api_client, post  # noqa: F401 (a fixture)
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

TASK = "Research the history of tea, then write a short summary"
EMAIL_TASK = "Write a two-line status note and email it to bob@example.com"
# Deep enough that json.loads runs out of stack, and a depth Python can parse but the pages
# cannot work with (every later json.dumps or validation recurses again).
TOO_DEEP = "[" * 5000 + "]" * 5000
DEEP_BUT_PARSABLE = "[" * 900 + "]" * 900


def new_run(client: Client, **fields: str):
    return client.post(reverse("run_new"), {"task": TASK, **fields})


# Numbers on the task form and the API.


def test_form_refuses_a_budget_in_usd_beyond_the_database_field(client_alice):
    response = new_run(client_alice, budget_usd="1e20")
    assert response.status_code == 400
    assert "Ensure that there are no more than 12 digits in total." in response.content.decode()
    assert not Run.objects.exists()


def test_form_refuses_a_token_budget_beyond_a_64_bit_integer(client_alice):
    response = new_run(client_alice, budget_tokens=str(2**63))
    assert response.status_code == 400
    assert "less than or equal to 9223372036854775807" in response.content.decode()
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("budget_usd", 1e20, "no more than 12 digits in total"),
        ("budget_usd", "100000000", "no more than 8 digits before the decimal point"),
        ("budget_usd", "0.00001", "no more than 4 decimal places"),
        ("budget_tokens", 2**63, "9223372036854775807"),
        ("max_replans", 2**64, "10"),
    ],
)
def test_api_refuses_numbers_beyond_the_database_fields(api_client, field, value, message):  # noqa: F811
    api = api_client()
    response = post(api, "/api/v1/runs", {"task": TASK, field: value})
    assert response.status_code == 422, response.content
    assert response.json()["detail"][0]["loc"][-1] == field
    assert message in response.json()["detail"][0]["msg"]
    assert not Run.objects.exists()


def test_a_stored_budget_out_of_range_breaks_no_page(alice, make_user, api_client):  # noqa: F811
    """A row written before the bounds (SQLite keeps whatever it is given) still reads."""
    run = planned(alice, TASK)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE planner_ui_run SET budget_usd = 1e20, budget_tokens = 9223372036854775807 "
            "WHERE id = %s",
            [run.pk],
        )
    client = Client()
    client.force_login(alice)
    for url in [reverse("home"), reverse("run_list"), reverse("run_detail", args=[run.pk])]:
        assert client.get(url).status_code == 200, url
    api = api_client("alice")
    assert api.get("/api/v1/runs").status_code == 200
    assert api.get(f"/api/v1/runs/{run.pk}").status_code == 200
    staff = make_user("root")
    staff.is_staff = staff.is_superuser = True
    staff.save()
    admin = Client()
    admin.force_login(staff)
    assert admin.get("/admin/planner_ui/run/").status_code == 200
    assert admin.get(f"/admin/planner_ui/run/{run.pk}/change/").status_code == 200
    run.refresh_from_db()
    assert run.budget_usd == Decimal("99999999.9999")


def test_the_migration_clamps_stored_budgets(alice):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("planner_ui.migrations.0020_clamp_budgets")
    run = planned(alice, TASK)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE planner_ui_run SET budget_usd = 1e20, budget_tokens = 1e19 WHERE id = %s",
            [run.pk],
        )
    migration.clamp_budgets(apps, None)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT budget_usd, budget_tokens FROM planner_ui_run WHERE id = %s", [run.pk]
        )
        usd, tokens = cursor.fetchone()
    assert Decimal(str(usd)) == Decimal("99999999.9999") and tokens == 2**63 - 1


# JSON nested deeper than anything a plan or a tool's arguments needs.


@pytest.fixture
def run(alice) -> Run:
    return planned(alice, TASK)


@pytest.mark.parametrize("text", [TOO_DEEP, DEEP_BUT_PARSABLE])
def test_form_plan_import_refuses_deep_json(client_alice, run, text):
    response = client_alice.post(
        reverse("plan_import", args=[run.pk]),
        {"base_version": "1", "plan_json": text},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 400
    assert f"nested deeper than {MAX_JSON_DEPTH} levels" in response.content.decode()
    assert run.plan_versions.count() == 1


@pytest.mark.parametrize("text", [TOO_DEEP, DEEP_BUT_PARSABLE])
def test_api_plan_import_refuses_deep_json(api_client, text):  # noqa: F811
    api = api_client()
    run = planned(api.user, TASK)
    body = '{"base_version": 1, "plan": {"goal": ' + text + "}}"
    response = api.post(f"/api/v1/runs/{run.pk}/plan/import", body, content_type="application/json")
    assert response.status_code == 400
    assert f"nested deeper than {MAX_JSON_DEPTH} levels" in response.json()["detail"]


@pytest.fixture
def waiting(alice) -> Approval:
    run = planned(alice, EMAIL_TASK)
    run_approve_plan(run.pk)
    drive(run)
    return run.approvals.get(state=Approval.State.PENDING)


@pytest.mark.parametrize("text", ["[" * 2000 + "]" * 2000, DEEP_BUT_PARSABLE])
def test_form_approval_arguments_refuse_deep_json(client_alice, waiting, text):
    arguments = '{"to": "bob@example.com", "subject": ' + text + "}"
    response = client_alice.post(
        reverse("approval_decide", args=[waiting.pk]),
        {"decision": "approve", "arguments": arguments},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 409
    assert f"nested deeper than {MAX_JSON_DEPTH} levels" in response.content.decode()
    waiting.refresh_from_db()
    assert waiting.state == Approval.State.PENDING


def test_api_approval_arguments_refuse_deep_json(api_client, alice, waiting):  # noqa: F811
    api = api_client("alice")
    body = '{"decision": "approve", "arguments": {"subject": ' + DEEP_BUT_PARSABLE + "}}"
    response = api.post(
        f"/api/v1/approvals/{waiting.pk}/decide", body, content_type="application/json"
    )
    assert response.status_code == 400
    assert f"nested deeper than {MAX_JSON_DEPTH} levels" in response.json()["detail"]
    waiting.refresh_from_db()
    assert waiting.state == Approval.State.PENDING


# Ids and versions: ASCII digits only, and a version that is not one is refused.


@pytest.mark.parametrize("version", ["v1", "²", "1e3", " 1", "-1", str(10**30)])
def test_approving_a_version_that_is_not_a_number_is_refused(client_alice, run, version):
    response = client_alice.post(reverse("run_approve", args=[run.pk]), {"version": version})
    assert response.status_code == 302
    page = client_alice.get(response["Location"]).content.decode()
    assert "is not a plan version number" in page
    run.refresh_from_db()
    assert run.status == "awaiting_plan_approval"


def test_approving_without_a_version_still_approves_the_current_one(client_alice, run):
    client_alice.post(reverse("run_approve", args=[run.pk]), {})
    run.refresh_from_db()
    assert run.status == "running"


@pytest.mark.parametrize("approval_id", ["²", "٣", str(10**30)])
def test_deciding_many_refuses_an_id_that_is_not_a_number(client_alice, waiting, approval_id):
    response = client_alice.post(
        reverse("approvals_decide_many"),
        {"decision": "approve", "approval": [str(waiting.pk), approval_id]},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 400
    assert "is not a request number" in response.content.decode()
    waiting.refresh_from_db()
    assert waiting.state == Approval.State.PENDING


@pytest.mark.parametrize("value", ["1e23", "²", str(10**23)])
def test_inbox_filter_by_run_refuses_what_is_not_a_run_number(client_alice, waiting, value):
    response = client_alice.get(reverse("approvals_inbox"), {"run": value})
    assert response.status_code == 400
    assert "is not a run number" in response.content.decode()


@pytest.mark.parametrize("value", ["1e23", str(10**23)])
def test_api_inbox_filter_by_run_is_bounded(api_client, value):  # noqa: F811
    response = api_client().get("/api/v1/approvals", {"run": value})
    assert response.status_code == 422


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/runs/{big}",
        "/api/v1/runs/{big}/plan",
        "/api/v1/runs/{run}/plan/versions/{big}",
        "/api/v1/runs/{run}/events?after={big}",
        "/api/v1/runs/{run}/plan/diff?base={big}&other=1",
    ],
)
def test_api_ids_beyond_the_database_range_are_refused(api_client, path):  # noqa: F811
    api = api_client()
    run = planned(api.user, TASK)
    response = api.get(path.format(big=10**30, run=run.pk))
    assert response.status_code in (404, 422), response.content


def test_api_approve_with_a_version_beyond_the_database_range(api_client):  # noqa: F811
    api = api_client()
    run = planned(api.user, TASK)
    response = post(api, f"/api/v1/runs/{run.pk}/plan/approve", {"version": 10**30})
    assert response.status_code == 422


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("plan_change", {"base_version": str(10**30), "op": "delete", "step_id": "x"}),
        ("plan_change", {"base_version": "²", "op": "delete", "step_id": "x"}),
        ("plan_revision", {"base_version": "1", "action": "accept", "proposal": str(10**30)}),
        ("replan_decide", {"action": "accept", "proposal": "²"}),
    ],
)
def test_plan_forms_refuse_numbers_that_are_not_versions(client_alice, run, name, data):
    response = client_alice.post(reverse(name, args=[run.pk]), data, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert run.plan_versions.count() == 1


@pytest.mark.parametrize("query", [{"from": "²", "to": "1"}, {"from": str(10**30), "to": "1"}])
def test_plan_diff_refuses_what_is_not_a_version(client_alice, run, query):
    response = client_alice.get(reverse("plan_diff", args=[run.pk]), query)
    assert response.status_code == 400


def test_compare_with_a_run_number_out_of_range_is_a_404(client_alice, run):
    response = client_alice.get(reverse("run_compare", args=[run.pk]), {"with": str(10**30)})
    assert response.status_code == 404


# Text that ends up in a header or a parser.


@pytest.mark.parametrize("kind", ["json\n", "md\r\nX-Evil: 1", "exe"])
def test_report_of_an_unknown_kind_is_a_404(client_alice, run, kind):
    response = client_alice.get(f"/runs/{run.pk}/report.{kind.replace(chr(10), '%0A')}")
    assert response.status_code == 404
    assert "X-Evil" not in response


def test_mcp_url_that_cannot_be_parsed_is_refused(client_alice):
    response = client_alice.post(
        reverse("mcp_server_new"), {"name": "notes", "transport": "http", "url": "http://[::1"}
    )
    assert response.status_code == 302
    page = client_alice.get(response["Location"]).content.decode()
    assert "Could not list its tools" in page or "cannot be read" in page


def test_local_model_path_of_an_unknown_users_home_is_refused(make_user):
    admin = make_user("root")
    admin.is_staff = True
    admin.save()
    client = Client()
    client.force_login(admin)
    response = client.post(
        reverse("local_model_start"), {"model_path": "~nosuchuser/x.gguf"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 400
    assert "~nosuchuser" in response.content.decode()


def test_api_body_of_json_too_deep_for_python_is_a_400(api_client):  # noqa: F811
    response = api_client().post("/api/v1/runs", TOO_DEEP, content_type="application/json")
    assert response.status_code == 400
    assert json.loads(response.content)["detail"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/runs", {"task": "Research tea\u0000"}),
        ("/api/v1/runs", {"task": "Research tea", "routes": {"planner\u0000": "offline:x"}}),
    ],
)
def test_api_refuses_nul_characters_postgresql_cannot_store(api_client, path, body):  # noqa: F811
    response = post(api_client(), path, body)
    assert response.status_code == 400
    assert "NUL" in response.json()["detail"]
    assert not Run.objects.exists()


# NUL characters: PostgreSQL stores none in text or jsonb (psycopg raises: a 500 there).


@pytest.mark.parametrize(
    ("method", "path", "data"),
    [
        ("post", "approvals_decide_many", {"decision": "approve", "reason": "ok\x00"}),
        ("post", "api_tokens", {"name": "laptop\x00"}),
        ("get", "approvals_inbox", {"tool": "send\x00email"}),
    ],
)
def test_a_nul_in_a_form_or_query_field_is_refused(client_alice, waiting, method, path, data):
    response = getattr(client_alice, method)(reverse(path), data)
    assert response.status_code == 400
    assert "NUL" in response.content.decode()
    waiting.refresh_from_db()
    assert waiting.state == Approval.State.PENDING


def test_a_nul_in_the_url_path_is_refused(client_alice, run):
    response = client_alice.get(f"/runs/{run.pk}/files/notes%00.md")
    assert response.status_code == 400


def test_a_nul_escaped_in_an_imported_plan_is_refused(client_alice, run):
    plan = {"goal": "tea\u0000", "steps": []}
    response = client_alice.post(
        reverse("plan_import", args=[run.pk]),
        {"base_version": "1", "plan_json": json.dumps(plan)},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 400
    assert "NUL" in response.content.decode()


def test_a_nul_escaped_in_edited_arguments_is_refused(client_alice, waiting):
    arguments = json.dumps({**waiting.arguments, "subject": "hi\u0000"})
    response = client_alice.post(
        reverse("approval_decide", args=[waiting.pk]),
        {"decision": "approve", "arguments": arguments},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 409
    assert "NUL" in response.content.decode()
    waiting.refresh_from_db()
    assert waiting.state == Approval.State.PENDING
