"""Every HTTP route, walked as another user and as nobody: alice owns one object of every kind
(a run waiting at a gate with its steps, approval, files, events, plan versions and re-plan, a
run that succeeded; a template, a suite and an experiment, an MCP server and its tool, an API
token, a local model), bob owns the same, and bob and an anonymous client try each route with
every method.

- A route reaching one of alice's objects answers bob exactly as it answers for an object that
  does not exist (403, 404, 405 or, on the API, 422 for the body), with none of her text, and
  nothing of hers changes. An anonymous client is sent to log in (401 on the API).
- A route listing or making "your" things shows bob none of alice's, and ids of hers in his
  forms change none of them; nor do they posted to his own objects' routes.
- A template staff shared is read and run by bob, never changed, and never shows him the
  values alice's schedule runs it with.
- Every page refuses an unsafe method without the CSRF token; the API takes no session.

A route missing from ROUTES fails the first test, so a new one cannot be left out, and controls
show alice reaches her own objects, so the checks can fail. The WebSocket routes are classified
here too and held by the consumer tests named in WEBSOCKET_ROUTES."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from planner_ui.core.evaluation import arm_parse, suite_load
from planner_ui.core.status import RunStatus
from planner_ui.models import (
    ApiToken,
    Approval,
    Experiment,
    LocalModel,
    McpServer,
    McpServerTool,
    PlanProposal,
    PlanTemplate,
    Run,
    RunFile,
)
from planner_ui.routing import websocket_urlpatterns
from planner_ui.services.evaluations import experiment_create, suite_save
from planner_ui.services.runs import run_approve_plan
from planner_ui.services.templates import template_save, template_schedule_set, template_share
from planner_ui.services.tokens import token_create
from tests.services.test_runs import drive, planned

# Alice's text: each of her objects carries it, and no answer to anyone else may.
SECRET = "Quokkasecret"
TASK = f"Write a two-line status note on {SECRET} and email it to bob@example.com"
SUITE = f"""name: {SECRET.lower()}-suite
tasks:
  - id: only
    task: "Write about {SECRET}"
    checks: [{{type: contains, text: "{SECRET}"}}]
"""
# What bob posts in every form: nothing of alice's text, so whatever he makes is his own.
BOB_SUITE = """name: bobs-suite
tasks:
  - id: only
    task: "Write about bob"
    checks: [{type: contains, text: "bob"}]
"""
# The other answer of each form: discard a re-plan or revision, reject a call.
NO = {"action": "discard", "decision": "reject"}
BOB = "Bobsown"  # the text of bob's own objects
MISSING = 987_654  # an id no object has

# What each route reaches.
PUBLIC = "public"  # anyone: probes, the login pages, the API's own description
STAFF = "staff"  # the admin and the local-model panel: a plain user is refused
MINE = "mine"  # the signed-in person's own things: lists, forms that make something new
OWNED = "owned"  # one object of its owner's, named in the path
HOOK = "hook"  # a template's webhook: anyone holding its secret, else refused

ROUTES: dict[str, tuple[str, str]] = {
    # route: (what it reaches, the object its ids name)
    "healthz": (PUBLIC, "-"),
    "readyz": (PUBLIC, "-"),
    "admin/": (STAFF, "the Django admin"),
    "accounts/login/": (PUBLIC, "-"),
    "accounts/logout/": (PUBLIC, "the caller's own session"),
    "": (MINE, "the person's runs"),
    "runs/": (MINE, "the person's runs"),
    "runs/new/": (MINE, "a new run"),
    "runs/new/hosts/": (MINE, "hosts of a task being typed"),
    "runs/new/similar/": (MINE, "the person's similar runs"),
    "runs/new/from/<int:run_id>/": (OWNED, "Run (the plan to start from)"),
    "runs/<int:run_id>/": (OWNED, "Run"),
    "runs/<int:run_id>/steps/": (OWNED, "Run's steps"),
    "runs/<int:run_id>/steps/<slug:step_id>/editor/": (OWNED, "Step (its edit forms)"),
    "runs/<int:run_id>/steps/<slug:step_id>/output/": (OWNED, "Step (its whole output)"),
    "runs/<int:run_id>/result/": (OWNED, "Run (its whole result)"),
    "runs/<int:run_id>/timeline/": (OWNED, "Run's events"),
    "runs/<int:run_id>/estimate/": (OWNED, "Run's steps (actual beside estimate)"),
    "runs/<int:run_id>/log/": (OWNED, "Run's events (earlier in the log)"),
    "runs/<int:run_id>/report.<str:kind>": (OWNED, "Run's report"),
    "runs/<int:run_id>/files/<path:path>": (OWNED, "RunFile"),
    "runs/<int:run_id>/approve/": (OWNED, "Run's PlanVersion"),
    "runs/<int:run_id>/cancel/": (OWNED, "Run"),
    "runs/<int:run_id>/pause/": (OWNED, "Run"),
    "runs/<int:run_id>/resume/": (OWNED, "Run"),
    "runs/<int:run_id>/steps/<slug:step_id>/retry/": (OWNED, "Step"),
    "runs/<int:run_id>/steps/<slug:step_id>/fork/": (OWNED, "Step (a fork of its run)"),
    "runs/<int:run_id>/steps/<slug:step_id>/again/": (OWNED, "Step (its retry and fork forms)"),
    "runs/<int:run_id>/replan/": (OWNED, "PlanProposal (re-plan)"),
    "runs/<int:run_id>/baseline/": (OWNED, "Run (its baseline)"),
    "runs/<int:run_id>/compare/": (OWNED, "Run and ?with= Run"),
    "settings/api-tokens/": (MINE, "the person's ApiTokens"),
    "settings/mcp/": (MINE, "the person's and shared McpServers"),
    "settings/local-models/": (STAFF, "LocalModels"),
    "settings/local-models/start/": (STAFF, "a new LocalModel"),
    "settings/local-models/<int:model_id>/stop/": (STAFF, "LocalModel"),
    "settings/mcp/new/": (MINE, "a new McpServer"),
    "settings/mcp/<int:server_id>/check/": (OWNED, "McpServer"),
    "settings/mcp/<int:server_id>/remove/": (OWNED, "McpServer"),
    "settings/mcp/tools/<int:tool_id>/": (OWNED, "McpServerTool"),
    "settings/api-tokens/<int:token_id>/revoke/": (OWNED, "ApiToken"),
    "approvals/": (MINE, "the person's Approvals"),
    "approvals/count/": (MINE, "the person's Approvals"),
    "approvals/decide/": (MINE, "Approvals named in the form"),
    "approvals/<int:approval_id>/decide/": (OWNED, "Approval"),
    "runs/<int:run_id>/plan/change/": (OWNED, "Run's plan"),
    "runs/<int:run_id>/plan/revision/": (OWNED, "Run's PlanProposal"),
    "runs/<int:run_id>/plan/import/": (OWNED, "Run's plan"),
    "runs/<int:run_id>/plan/diff/": (OWNED, "Run's PlanVersions"),
    "runs/<int:run_id>/plan/v<int:number>.json": (OWNED, "PlanVersion"),
    "evaluations/": (MINE, "the person's suites and experiments"),
    "evaluations/suites/new/": (MINE, "a new EvaluationSuite"),
    "evaluations/suites/<int:suite_id>/": (OWNED, "EvaluationSuite"),
    "evaluations/suites/<int:suite_id>/delete/": (OWNED, "EvaluationSuite"),
    "evaluations/suites/<int:suite_id>/suite.<str:fmt>": (OWNED, "EvaluationSuite"),
    "evaluations/suites/<int:suite_id>/experiment/": (OWNED, "EvaluationSuite"),
    "evaluations/experiments/<int:experiment_id>/": (OWNED, "Experiment"),
    "evaluations/experiments/<int:experiment_id>/cancel/": (OWNED, "Experiment"),
    "evaluations/experiments/<int:experiment_id>/pause/": (OWNED, "Experiment"),
    "evaluations/experiments/<int:experiment_id>/resume/": (OWNED, "Experiment"),
    "evaluations/experiments/<int:experiment_id>/results.<str:fmt>": (OWNED, "Experiment"),
    "runs/<int:run_id>/template/": (OWNED, "Run's PlanVersion (a template from it)"),
    "templates/": (MINE, "the person's and shared PlanTemplates"),
    "templates/<int:template_id>/": (OWNED, "PlanTemplate"),
    "templates/<int:template_id>/run/": (OWNED, "PlanTemplate"),
    "templates/<int:template_id>/v<int:number>.json": (OWNED, "PlanTemplateVersion"),
    "templates/<int:template_id>/versions/": (OWNED, "PlanTemplate"),
    "templates/<int:template_id>/share/": (OWNED, "PlanTemplate"),
    "templates/<int:template_id>/delete/": (OWNED, "PlanTemplate"),
    "templates/<int:template_id>/trigger-policy/": (OWNED, "PlanTemplate"),
    "templates/<int:template_id>/schedule/": (OWNED, "PlanTemplate"),
    "templates/<int:template_id>/webhook/": (OWNED, "PlanTemplate"),
    "templates/<int:template_id>/webhook/mapping/": (OWNED, "PlanTemplate"),
    # The JSON API (each path also answers with a trailing slash, the same view).
    "api/v1/": (PUBLIC, "-"),
    "api/v1/openapi.json": (PUBLIC, "-"),
    "api/v1/docs": (PUBLIC, "-"),
    "api/v1/runs": (MINE, "the person's runs, a new run"),
    "api/v1/runs/<run_id>": (OWNED, "Run"),
    "api/v1/runs/<run_id>/cancel": (OWNED, "Run"),
    "api/v1/runs/<run_id>/pause": (OWNED, "Run"),
    "api/v1/runs/<run_id>/resume": (OWNED, "Run"),
    "api/v1/runs/<run_id>/steps/<step_id>/retry": (OWNED, "Step"),
    "api/v1/runs/<run_id>/steps/<step_id>/fork": (OWNED, "Step (a fork of its run)"),
    "api/v1/runs/<run_id>/events": (OWNED, "Run's events"),
    "api/v1/runs/<run_id>/usage": (OWNED, "Run's model calls"),
    "api/v1/runs/<run_id>/report": (OWNED, "Run's report"),
    "api/v1/runs/<run_id>/plan": (OWNED, "Run's PlanVersion"),
    "api/v1/runs/<run_id>/plan/versions/<number>": (OWNED, "PlanVersion"),
    "api/v1/runs/<run_id>/plan/edits": (OWNED, "Run's plan"),
    "api/v1/runs/<run_id>/plan/import": (OWNED, "Run's plan"),
    "api/v1/runs/<run_id>/plan/diff": (OWNED, "Run's PlanVersions"),
    "api/v1/runs/<run_id>/plan/approve": (OWNED, "Run's PlanVersion"),
    "api/v1/runs/<run_id>/plan/template": (OWNED, "Run's PlanVersion (a template from it)"),
    "api/v1/approvals": (MINE, "the person's Approvals"),
    "api/v1/approvals/<approval_id>/decide": (OWNED, "Approval"),
    "api/v1/suites": (MINE, "the person's suites, a new one"),
    "api/v1/suites/<suite_id>": (OWNED, "EvaluationSuite"),
    "api/v1/experiments": (MINE, "the person's experiments, a new one (suite in the body)"),
    "api/v1/experiments/<experiment_id>": (OWNED, "Experiment"),
    "api/v1/experiments/<experiment_id>/cancel": (OWNED, "Experiment"),
    "api/v1/experiments/<experiment_id>/pause": (OWNED, "Experiment"),
    "api/v1/experiments/<experiment_id>/resume": (OWNED, "Experiment"),
    "api/v1/templates": (MINE, "the person's and shared templates, a new one"),
    "api/v1/templates/<template_id>": (OWNED, "PlanTemplate"),
    "api/v1/templates/<template_id>/runs": (OWNED, "PlanTemplate"),
    "api/v1/templates/<template_id>/webhook": (OWNED, "PlanTemplate"),
    "api/v1/templates/<template_id>/webhook-mapping": (OWNED, "PlanTemplate"),
    "api/v1/templates/<template_id>/trigger-policy": (OWNED, "PlanTemplate"),
    "api/v1/templates/<template_id>/schedule": (OWNED, "PlanTemplate"),
    "api/v1/hooks/templates/<template_id>": (HOOK, "PlanTemplate (its webhook secret)"),
}

# The WebSocket routes, each with the tests that hold it (checked below to exist).
WEBSOCKET_ROUTES = {
    "ws/runs/<int:run_id>/": [
        "tests.web.test_consumer::test_another_user_is_refused",
        "tests.web.test_consumer::test_anonymous_is_refused",
        "tests.web.test_consumer::test_a_missing_run_is_refused_like_another_users",
        "tests.api.test_websocket::test_another_users_token_and_a_revoked_one_are_refused",
    ],
    "ws/inbox/": [
        "tests.web.test_consumer::test_the_inbox_socket_pushes_the_pending_count_to_its_user_only",
    ],
}

METHODS = ("get", "post", "put", "patch", "delete")
LOGIN_URL = "/accounts/login/"


def _walk(patterns: list[Any], prefix: str = "") -> Iterator[str]:
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            if route == "admin/":  # Django's own, staff only as a whole
                yield route
            else:
                yield from _walk(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            # The API's slashed twins are the same views as the slashless paths.
            yield route.rstrip("/") if route.startswith("api/v1/") and route != "api/v1/" else route


def all_routes() -> list[str]:
    return sorted(set(_walk(get_resolver().url_patterns)))


def test_every_route_is_classified() -> None:
    routes = set(all_routes())
    assert sorted(routes - ROUTES.keys()) == [], "new routes: classify them in ROUTES"
    assert sorted(ROUTES.keys() - routes) == [], "routes that are gone: drop them from ROUTES"
    sockets = {str(p.pattern) for p in websocket_urlpatterns}
    assert sockets == WEBSOCKET_ROUTES.keys()
    for tests in WEBSOCKET_ROUTES.values():
        for test in tests:
            module, name = test.split("::")
            assert callable(getattr(importlib.import_module(module), name, None)), test


@dataclass
class World:
    """Alice's objects, and what each path parameter is for them and for nothing."""

    ids: dict[str, str]
    run: Run
    approval: Approval
    proposal: PlanProposal
    alice: Any
    bob: Client
    bob_api: Client
    alice_api: Client
    template_versions: set[int]
    shared_template_id: str
    bob_ids: dict[str, str]  # bob's own objects of every kind
    hers: dict[str, set[int]] = field(default_factory=dict)  # alice's objects, by foreign key


@pytest.fixture(scope="module")
def world(django_db_setup: Any, django_db_blocker: Any) -> Iterator[World]:
    """Made once for the module (a run driven to its gate takes a while) and committed; each
    test's changes roll back with its transaction. No task is sent and nothing is published:
    no worker is involved, and the run is driven in this process."""
    with (
        django_db_blocker.unblock(),
        mock.patch("planner_ui.services.broadcast.tasks_send"),
        mock.patch("planner_ui.services.broadcast.group_publish"),
    ):
        users = get_user_model().objects
        alice = users.create_user("alice-er", password="pw-for-tests-1")
        bob = users.create_user("bob-er", password="pw-for-tests-1")
        try:
            yield _make_world(alice, bob)
        finally:
            # A run's approved plan is protected from deletion while the run points at it.
            Run.objects.filter(owner__in=[alice, bob]).update(approved_plan=None)
            users.filter(pk__in=[alice.pk, bob.pk]).delete()
            users.filter(username="staff-er").delete()
            LocalModel.objects.filter(name__startswith=SECRET.lower()).delete()


def _objects(user: Any, mark: str) -> tuple[dict[str, str], Run, Approval, PlanProposal, Any]:
    """One object of every kind for `user`, each carrying `mark`; the path parameters naming
    them, and the run, its gate, its re-plan and the template."""
    run = planned(user, f"Write a two-line status note on {mark} and email it to bob@example.com")
    run_approve_plan(run.pk)
    drive(run)
    approval = run.approvals.get(state=Approval.State.PENDING)
    step = run.steps.order_by("pk").first()
    RunFile.objects.create(
        run=run, path="notes.txt", content=mark.encode(), size=len(mark), sha256="0" * 64
    )
    proposal = PlanProposal.objects.create(
        run=run, kind=PlanProposal.Kind.REPLAN, base_version=1, note=mark, state="ready"
    )
    saved = template_save(
        user=user,
        name=f"{mark} template",
        task=f"{mark} for {{who}}",
        plan={"steps": [{"id": "a", "title": mark, "instruction": "Hi {who}", "role": "writer"}]},
    )
    suite = suite_save(user, SUITE.replace(SECRET, mark).replace(SECRET.lower(), mark.lower()))
    experiment = experiment_create(user, suite_load(suite.content), [arm_parse("plan")])
    server = McpServer.objects.create(
        owner=user, name=mark.lower(), transport="http", url="http://127.0.0.1:9/mcp"
    )
    tool = McpServerTool.objects.create(
        server=server, name=f"{mark}_tool", description=mark, digest="0" * 64
    )
    token, _ = token_create(user=user, name=mark)
    ids = {
        "run_id": str(run.pk),
        "step_id": step.step_id,
        "kind": "md",
        "path": "notes.txt",
        "server_id": str(server.pk),
        "tool_id": str(tool.pk),
        "token_id": str(token.pk),
        "approval_id": str(approval.pk),
        "number": "1",
        "suite_id": str(suite.pk),
        "fmt": "json",
        "experiment_id": str(experiment.pk),
        "template_id": str(saved.template_id),
    }
    return ids, run, approval, proposal, saved.template


def _make_world(alice: Any, bob: Any) -> World:
    ids, run, approval, proposal, template = _objects(alice, SECRET)
    # A run that succeeded: the plan library and the history's search hold it.
    done = planned(alice, f"Research the history of {SECRET}, then write a short summary")
    run_approve_plan(done.pk)
    assert drive(done).status == RunStatus.SUCCEEDED, done.error
    model = LocalModel.objects.create(path=f"/nowhere/{SECRET}.gguf", name=SECRET.lower())
    ids["model_id"] = str(model.pk)
    bob_ids = _objects(bob, BOB)[0]
    bob_ids["model_id"] = ids["model_id"]
    bob_client = Client()
    bob_client.force_login(bob)
    _, bob_raw = token_create(user=bob, name="bob's")
    bob_api = Client(headers={"Authorization": f"Bearer {bob_raw}"})
    _, alice_raw = token_create(user=alice, name="alice's")
    alice_api = Client(headers={"Authorization": f"Bearer {alice_raw}"})
    # A template staff shared: bob may read and run it, never change it, and never read the
    # values alice's schedule fills it with.
    lent = template_save(
        user=alice,
        name="Lent template",
        task="Weather in {city}",
        plan={"steps": [{"id": "a", "title": "Look", "instruction": "{city}", "role": "writer"}]},
    ).template
    template_schedule_set(lent, alice, "every 2 hours", {"city": SECRET})
    staff = get_user_model().objects.create_user("staff-er", is_staff=True)
    template_share(lent, staff, True)
    versions = set(template.versions.values_list("pk", flat=True))
    hers = {
        "template_id": set(PlanTemplate.objects.filter(owner=alice).values_list("pk", flat=True)),
        "server_id": set(McpServer.objects.filter(owner=alice).values_list("pk", flat=True)),
        "experiment_id": set(Experiment.objects.filter(owner=alice).values_list("pk", flat=True)),
        "run_id": set(Run.objects.filter(owner=alice).values_list("pk", flat=True)),
    }
    return World(
        ids,
        run,
        approval,
        proposal,
        alice,
        bob_client,
        bob_api,
        alice_api,
        versions,
        str(lent.pk),
        bob_ids,
        hers,
    )


def _url(route: str, ids: dict[str, str]) -> str:
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: ids[m.group(1)], route)


def _form(world: World) -> dict[str, str]:
    """One form for every POST: each field a view reads, ids naming alice's objects, so a view
    that checked its form before its owner would act on them."""
    return {
        "decision": "approve",
        "action": "accept",
        "approval": str(world.approval.pk),
        "proposal": str(world.proposal.pk),
        "version": "1",
        "base_version": "1",
        "task": "Research the history, then summarise",  # as alice's run that succeeded
        "name": "bobs",
        "note": "bob was here",
        "reason": "bob was here",
        "op": "undo",
        "effect": "read",
        "content": BOB_SUITE,
        "shared": "on",
        "downstream": "on",
        "from": "inbox",
        "run": str(world.run.pk),
        "template": world.ids["template_id"],
    }


def _send(client: Client, method: str, url: str, world: World, api: bool, **fields: str) -> Any:
    if method == "get":
        # Ids of alice's, and words of her task for the searches.
        query = {
            "with": world.run.pk,
            "from": 1,
            "to": 1,
            "base": 1,
            "other": 1,
            "q": "status note",
        }
        return client.get(url, {**query, "run": world.run.pk, "template": world.ids["template_id"]})
    if api:
        # The API's bodies name alice's objects in their own fields.
        body = {**_form(world), **fields, "suite_id": int(world.ids["suite_id"]), "arms": ["plan"]}
        return getattr(client, method)(url, body, content_type="application/json")
    return getattr(client, method)(url, {**_form(world), **fields})


def _snapshot(alice: Any) -> dict[str, Any]:
    """Every row of every model of the app, but the API tokens' last use (each request of
    bob's marks his own)."""
    rows: dict[str, Any] = {}
    for model in apps.get_app_config("planner_ui").get_models():
        query = model.objects.order_by("pk").values()
        if model is ApiToken:
            query = query.filter(user=alice)
        rows[model.__name__] = list(query)
    return rows


def _no_secret(response: Any) -> None:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert SECRET.lower().encode() not in body.lower(), body[:2000]


OWNED_ROUTES = sorted(r for r, (kind, _) in ROUTES.items() if kind == OWNED)
MINE_ROUTES = sorted(r for r, (kind, _) in ROUTES.items() if kind == MINE)
OTHER_ROUTES = sorted(r for r, (kind, _) in ROUTES.items() if kind in (PUBLIC, STAFF, HOOK))


@pytest.mark.django_db
@pytest.mark.parametrize("route", OWNED_ROUTES)
def test_another_user_learns_nothing_and_changes_nothing(world: World, route: str) -> None:
    api = route.startswith("api/")
    client = world.bob_api if api else world.bob
    mine = _url(route, world.ids)
    # What "not found" looks like on this route: each id naming nothing.
    missing = _url(
        route, {**world.ids, **{k: str(MISSING) for k in world.ids if k.endswith("_id")}}
    )
    before = _snapshot(world.alice)
    for method in METHODS:
        answer = _send(client, method, mine, world, api)
        control = _send(client, method, missing, world, api)
        assert answer.status_code in {403, 404, 405, 422}, (method, answer.status_code)
        assert answer.status_code == control.status_code, (method, control.status_code)
        _no_secret(answer)
    assert _snapshot(world.alice) == before


@pytest.mark.django_db
@pytest.mark.parametrize("route", OWNED_ROUTES + MINE_ROUTES + ["settings/local-models/"])
def test_nobody_is_sent_to_log_in(world: World, route: str) -> None:
    api = route.startswith("api/")
    url = _url(route, world.ids)
    before = _snapshot(world.alice)
    # The API's paths answer with a trailing slash too: the same view, the same auth.
    for method, where in [(m, url) for m in METHODS] + [(m, url + "/") for m in METHODS if api]:
        answer = _send(Client(), method, where, world, api)
        if api:
            assert answer.status_code in {401, 405}, (method, answer.status_code)
        elif answer.status_code != 405:
            assert answer.status_code == 302, (method, answer.status_code)
            assert answer["Location"].startswith(LOGIN_URL), answer["Location"]
        _no_secret(answer)
    assert _snapshot(world.alice) == before


@pytest.mark.django_db
@pytest.mark.parametrize("route", MINE_ROUTES + OTHER_ROUTES)
def test_lists_forms_and_public_pages_show_another_user_nothing(world: World, route: str) -> None:
    """Bob's lists and forms hold none of alice's things, and the ids of hers in a form he
    posts change none of them (bob may make things of his own here)."""
    api = route.startswith("api/")
    client = world.bob_api if api else world.bob
    url = _url(route, world.ids)
    before = _snapshot(world.alice)
    for method in METHODS:
        if route == "accounts/logout/":
            continue
        answer = _send(client, method, url, world, api)
        assert answer.status_code < 500, (method, answer.status_code)
        if ROUTES[route][0] == STAFF:
            assert answer.status_code in {302, 403, 405}, (method, answer.status_code)
        if ROUTES[route][0] == HOOK:
            assert answer.status_code in {401, 403, 404, 405, 422}, (method, answer.status_code)
        _no_secret(answer)
    _assert_alices_unchanged(before, _snapshot(world.alice), world)


def _assert_alices_unchanged(before: dict[str, Any], after: dict[str, Any], world: World) -> None:
    """None of alice's rows changed, and no new row points at one of them (bob's own may
    come and go)."""
    for name in before:
        made = [row for row in after[name] if row not in before[name]]
        assert not [row for row in made if _refers_to_alices(row, world)], name
        mine_before = [row for row in before[name] if _alices(row, world)]
        mine_after = [row for row in after[name] if _alices(row, world)]
        assert mine_after == mine_before, name


def _refers_to_alices(row: dict[str, Any], world: World) -> bool:
    """Whether a row bob made points at one of alice's objects (a fork of her run, an
    experiment of her suite, a run of her template...)."""
    hers = {
        "run_id": world.run.pk,
        "baseline_of_id": world.run.pk,
        "forked_from_id": world.run.pk,
        "started_from_id": world.run.pk,
        "reused_from_id": world.run.pk,
        "suite_id": int(world.ids["suite_id"]),
        "server_id": int(world.ids["server_id"]),
        "approval_id": world.approval.pk,
    }
    if row.get("template_version_id") in world.template_versions:
        return True
    return any(row.get(field) == pk for field, pk in hers.items())


def _alices(row: dict[str, Any], world: World) -> bool:
    """Whether a row is one of alice's objects or part of one."""
    owner = row.get("owner_id", row.get("user_id"))
    if owner is not None:
        return owner == world.alice.pk
    for key in ("template_id", "server_id", "experiment_id", "run_id"):
        if row.get(key) is not None:
            return row[key] in world.hers[key]
    return True  # a local model, a sweep: compare them all


@pytest.mark.django_db
@pytest.mark.parametrize("route", OWNED_ROUTES)
def test_control_alice_reaches_her_own(world: World, route: str) -> None:
    """The checks above can fail: alice's own client reads each of her objects."""
    api = route.startswith("api/")
    client = world.alice_api if api else Client()
    if not api:
        client.force_login(world.alice)
    answer = _send(client, "get", _url(route, world.ids), world, api)
    if answer.status_code == 405:
        return  # a POST-only route; the POST is what test_another_user... refuses
    assert answer.status_code == 200, answer.status_code


# GET only, and may be answered by agentsite.probes before the CSRF middleware.
PROBES = {"healthz", "readyz"}
PAGE_ROUTES = sorted(r for r in ROUTES if not r.startswith("api/"))
API_ROUTES = sorted(r for r, (kind, _) in ROUTES.items() if r.startswith("api/") and kind != PUBLIC)


@pytest.mark.django_db
@pytest.mark.parametrize("route", PAGE_ROUTES)
def test_every_page_refuses_an_unsafe_method_without_the_csrf_token(
    world: World, route: str
) -> None:
    """Alice's own browser, on her own objects, with her form but not the page's token."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.alice)
    url = _url(route, world.ids)
    before = _snapshot(world.alice)
    for method in ("post", "put", "delete"):
        answer = getattr(client, method)(url, _form(world))
        if route in PROBES:
            assert answer.status_code in {403, 405}, (method, answer.status_code)
            continue
        assert answer.status_code == 403, (method, answer.status_code)
        assert b"CSRF verification failed" in answer.content
    assert _snapshot(world.alice) == before


@pytest.mark.django_db
@pytest.mark.parametrize("route", API_ROUTES)
def test_the_api_takes_no_session_so_needs_no_csrf(world: World, route: str) -> None:
    """A page of another site can make alice's browser send her cookie, never her token: the
    API answers the cookie alone as it answers nobody."""
    client = Client()
    client.force_login(world.alice)
    url = _url(route, world.ids)
    before = _snapshot(world.alice)
    for method in METHODS:
        answer = _send(client, method, url, world, api=True)
        assert answer.status_code in {401, 403, 405}, (method, answer.status_code)
    assert _snapshot(world.alice) == before


TEMPLATE_ROUTES = sorted(
    r for r in OWNED_ROUTES if "<template_id>" in r or "<int:template_id>" in r
)
# Where bob may act on a template lent to him: he runs it (his run, from alice's plan).
RUNS_A_TEMPLATE = {"templates/<int:template_id>/run/", "api/v1/templates/<template_id>/runs"}


@pytest.mark.django_db
@pytest.mark.parametrize("route", TEMPLATE_ROUTES)
def test_a_shared_template_is_read_and_run_by_others_never_changed(
    world: World, route: str
) -> None:
    api = route.startswith("api/")
    client = world.bob_api if api else world.bob
    url = _url(route, {**world.ids, "template_id": world.shared_template_id})
    before = _snapshot(world.alice)
    for method in METHODS:
        answer = _send(client, method, url, world, api)
        assert answer.status_code < 500, (method, answer.status_code)
        if method != "get" and route not in RUNS_A_TEMPLATE:
            # Refused: an error, or back to the page saying why (sharing is for staff).
            assert answer.status_code in {302, 403, 404, 405, 422}, (method, answer.status_code)
        _no_secret(answer)
    _assert_alices_unchanged(before, _snapshot(world.alice), world)


@pytest.mark.django_db
@pytest.mark.parametrize("route", OWNED_ROUTES)
def test_a_form_on_ones_own_object_reaches_none_of_anothers(world: World, route: str) -> None:
    """Bob posts to his own run, template, suite, server... with alice's approval, re-plan,
    run, template and suite ids in the form's fields (and the API body's): whatever his own
    object does with them, nothing of alice's changes or shows."""
    api = route.startswith("api/")
    client = world.bob_api if api else world.bob
    url = _url(route, world.bob_ids)
    before = _snapshot(world.alice)
    # The form says yes, then no: accept and approve, then discard and reject.
    for method, fields in [(m, {}) for m in METHODS] + [(m, NO) for m in METHODS if m != "get"]:
        answer = _send(client, method, url, world, api, **fields)
        assert answer.status_code < 500, (method, answer.status_code)
        _no_secret(answer)
    _assert_alices_unchanged(before, _snapshot(world.alice), world)


@pytest.mark.django_db
def test_control_alices_searches_find_her_runs(world: World) -> None:
    """The searches bob made above would have found alice's runs, had they been his."""
    client = Client()
    client.force_login(world.alice)
    similar = client.post("/runs/new/similar/", {"task": _form(world)["task"]})
    assert SECRET in similar.content.decode()
    history = client.get("/runs/", {"q": "status note"})
    assert SECRET in history.content.decode()
