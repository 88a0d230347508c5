"""The plan editor's forms over HTTP: htmx partials, plain posts, refusals, conflicts, diffs."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from planner_ui.models import Run
from planner_ui.services.runs import run_cancel, run_plan

pytestmark = pytest.mark.django_db

TASK = "Research the history of tea, then write a short summary"


@pytest.fixture
def run(alice):
    run = Run.objects.create(owner=alice, task=TASK)
    run_plan(run.pk)
    return run


def change(client, run, htmx=True, **data):
    data.setdefault("base_version", "1")
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(reverse("plan_change", args=[run.pk]), data, **headers)


def editor_urls(body: str) -> list[str]:
    return re.findall(r'class="step-editor-body" data-src="([^"]+)"', body)


def test_the_page_offers_edit_forms_before_approval(client_alice, run):
    body = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    # Each step's editor says where its forms come from when it opens; not the synthesizer's.
    assert sorted(editor_urls(body)) == [
        reverse("step_editor", args=[run.pk, "research-history-tea"]),
        reverse("step_editor", args=[run.pk, "write-short-summary"]),
    ]
    assert 'name="op" value="add"' in body and 'name="version" value="1"' in body
    forms = client_alice.get(editor_urls(body)[0], HTTP_HX_REQUEST="true")
    assert forms.status_code == 200 and "<html" not in forms.content.decode()
    for op in ("update", "add_dependency", "delete"):
        assert f'name="op" value="{op}"' in forms.content.decode()
    assert 'name="base_version" value="1"' in forms.content.decode()


def test_a_steps_forms_show_its_plan_and_offer_only_new_dependencies(client_alice, run):
    change(client_alice, run, op="update", step_id="write-short-summary", title="A <b>haiku</b>")
    url = reverse("step_editor", args=[run.pk, "write-short-summary"])
    forms = client_alice.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert 'value="A &lt;b&gt;haiku&lt;/b&gt;"' in forms and "<b>" not in forms
    assert 'name="base_version" value="2"' in forms  # the version it shows, not the page's
    # It runs after the research already: nothing is left to add, and that form is not sent.
    assert 'value="add_dependency"' not in forms
    assert 'aria-label="Remove dependency research-history-tea → write-short-summary"' in forms
    # The research may be put after the summary: the cycle is refused when it is posted.
    url = reverse("step_editor", args=[run.pk, "research-history-tea"])
    forms = client_alice.get(url, HTTP_HX_REQUEST="true").content.decode()
    options = re.search(r'<select id="dep-research-history-tea".*?</select>', forms, re.S)
    assert options and re.findall(r'<option value="([^"]+)">', options.group()) == [
        "write-short-summary"
    ]


def test_without_script_a_steps_forms_are_a_page_of_their_own_that_posts_plainly(client_alice, run):
    url = reverse("step_editor", args=[run.pk, "write-short-summary"])
    page = client_alice.get(url).content.decode()
    assert "<html" in page and 'id="step-editor" hx-disable' in page
    assert f'href="{reverse("run_detail", args=[run.pk])}"' in page
    response = change(
        client_alice, run, htmx=False, op="update", step_id="write-short-summary", title="Plain"
    )
    assert response.status_code == 302 and response["Location"] == reverse(
        "run_detail", args=[run.pk]
    )


def test_a_step_that_may_not_change_says_why_instead_of_offering_forms(client_alice, run):
    synthesizer = run.steps.get(role="synthesizer").step_id
    response = client_alice.get(
        reverse("step_editor", args=[run.pk, synthesizer]), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert "The synthesizer&#x27;s step is not edited" in response.content.decode()
    run_cancel(run.pk, run.owner)
    response = client_alice.get(
        reverse("step_editor", args=[run.pk, "write-short-summary"]), HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert response.status_code == 200 and "<form" not in body
    assert "its plan can no longer be changed" in body
    missing = reverse("step_editor", args=[run.pk, "no-such-step"])
    assert client_alice.get(missing, HTTP_HX_REQUEST="true").status_code == 404


def test_rename_via_htmx_returns_the_fragment_with_the_outcome(client_alice, run):
    response = change(
        client_alice, run, op="update", step_id="write-short-summary", title="Write a haiku"
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "Saved version 2:" in body and 'hx-swap-oob="true"' in body
    assert "Write a haiku" in body and "<html" not in body
    assert run.steps.get(step_id="write-short-summary").title == "Write a haiku"


def test_plain_post_redirects_with_a_message(client_alice, run):
    response = change(
        client_alice, run, htmx=False, op="update", step_id="write-short-summary", title="Plain"
    )
    assert response.status_code == 302
    page = client_alice.get(response["Location"]).content.decode()
    assert "Saved version 2:" in page


def test_a_cycle_is_refused_with_the_problem_named(client_alice, run):
    response = change(
        client_alice,
        run,
        op="add_dependency",
        step_id="research-history-tea",
        depends_on="write-short-summary",
    )
    body = response.content.decode()
    assert response.status_code == 400
    assert "The change was refused, and the plan is as it was:" in body
    assert "would create a cycle" in body
    assert run.plan_versions.count() == 1


def test_unticking_every_tool_is_a_real_change(client_alice, run):
    change(
        client_alice,
        run,
        op="update",
        step_id="research-history-tea",
        tools_shown="1",
        tools=["calculator"],
    )
    assert run.steps.get(step_id="research-history-tea").tools == ["calculator"]
    change(
        client_alice,
        run,
        base_version="2",
        op="update",
        step_id="research-history-tea",
        tools_shown="1",
    )
    assert run.steps.get(step_id="research-history-tea").tools == []


def test_an_unknown_tool_from_a_forged_form_is_refused(client_alice, run):
    response = change(
        client_alice,
        run,
        op="update",
        step_id="research-history-tea",
        tools_shown="1",
        tools=["shell_rm"],
    )
    assert response.status_code == 400
    assert "unknown tool &#x27;shell_rm&#x27;" in response.content.decode()


def test_a_stale_tab_gets_a_conflict_and_the_current_plan(client_alice, run):
    change(client_alice, run, op="update", step_id="write-short-summary", title="From tab one")
    response = change(
        client_alice, run, op="update", step_id="write-short-summary", title="From tab two"
    )
    body = response.content.decode()
    assert response.status_code == 409
    assert "The plan changed since you opened it" in body
    assert "From tab one" in body and 'name="base_version" value="2"' in body
    assert run.steps.get(step_id="write-short-summary").title == "From tab one"


def test_malformed_forms_get_a_clear_error(client_alice, run):
    response = change(client_alice, run, op="explode")
    assert response.status_code == 400
    assert "The form was incomplete: unknown edit &#x27;explode&#x27;" in response.content.decode()
    response = change(client_alice, run, base_version="x", op="undo")
    assert "&#x27;base_version&#x27; must be a version number" in response.content.decode()


def test_diff_between_versions(client_alice, run):
    change(
        client_alice,
        run,
        op="add",
        title="Check facts",
        instruction="Check them.",
        role="critic",
        depends_on=["research-history-tea"],
    )
    url = reverse("plan_diff", args=[run.pk]) + "?from=1&to=2"
    body = client_alice.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "Steps added: <code>check-facts</code>" in body
    assert "research-history-tea → check-facts" in body
    bad = client_alice.get(reverse("plan_diff", args=[run.pk]) + "?from=1&to=9")
    assert bad.status_code == 400 and "it has: 1, 2" in bad.content.decode()


def test_export_and_import(client_alice, run):
    exported = client_alice.get(reverse("plan_json", args=[run.pk, 1]))
    assert exported["Content-Disposition"] == f'attachment; filename="run-{run.pk}-plan-v1.json"'
    data = json.loads(exported.content)
    data["goal"] = "Imported"
    response = client_alice.post(
        reverse("plan_import", args=[run.pk]),
        {"base_version": "1", "plan_json": json.dumps(data)},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200 and "imported from JSON" in response.content.decode()
    bad = client_alice.post(
        reverse("plan_import", args=[run.pk]),
        {"base_version": "2", "plan_json": '{"steps": []}'},
        HTTP_HX_REQUEST="true",
    )
    assert bad.status_code == 400 and "the plan has no steps" in bad.content.decode()


def test_another_user_can_neither_edit_nor_read_the_plan(run, make_user):
    mallory = Client()
    mallory.force_login(make_user("mallory"))
    assert (
        change(mallory, run, op="update", step_id="write-short-summary", title="pwned").status_code
        == 404
    )
    assert mallory.get(reverse("plan_json", args=[run.pk, 1])).status_code == 404
    assert mallory.get(reverse("plan_diff", args=[run.pk]) + "?from=1&to=1").status_code == 404
    assert run.plan_versions.count() == 1


def test_the_step_form_sends_every_field_and_the_note_names_the_one_changed(client_alice, run):
    step = run.steps.get(step_id="write-short-summary")
    response = change(
        client_alice,
        run,
        op="update",
        step_id=step.step_id,
        title=step.title,
        instruction=step.instruction,
        role="critic",
        tools=step.tools,
        tools_shown="1",
    )
    assert response.status_code == 200
    assert run.plan_versions.get(number=2).note == "changed role of step 'write-short-summary'"


def _page_with_steps(client, alice, count: int) -> str:
    from planner_ui.services.plans import plan_import

    run = Run.objects.create(owner=alice, task=TASK)
    run_plan(run.pk)
    steps = [
        {"id": f"s{i}", "title": f"Step {i}", "instruction": "Do it.", "role": "writer"}
        for i in range(count)
    ]
    plan_import(run_id=run.pk, base_version=1, text=json.dumps({"steps": steps}))
    return client.get(reverse("run_detail", args=[run.pk])).content.decode()


def test_the_editor_page_grows_with_the_plan_not_with_its_square(client_alice, alice):
    # A step's forms come when its editor opens, its "Run after" list with them: sent with
    # every step, the lists made 2.6 MB of a 200-step plan's page, and the forms 5 of 6.7 MB
    # of a 1,000-step plan's.
    small, large = (
        _page_with_steps(client_alice, alice, 5),
        _page_with_steps(client_alice, alice, 20),
    )
    assert small.count("<option") > 5 and large.count("<option") > 20
    assert large.count("<option") < 4.5 * small.count("<option")
    assert len(editor_urls(large)) == 20 and 'name="op" value="update"' not in large
    assert 'action=""' not in large and 'hx-post=""' not in large  # every form posts its change
