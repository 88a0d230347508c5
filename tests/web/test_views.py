"""Pages over HTTP: login, submission, the run page, history; CSRF and ownership."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from planner_ui.models import Run
from planner_ui.services.runs import run_plan

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["home", "run_list"])
def test_pages_require_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_login_page_logs_in(client, alice):
    response = client.post(reverse("login"), {"username": "alice", "password": "pw-for-tests-1"})
    assert response.status_code == 302 and response["Location"] == reverse("home")


def test_submit_creates_a_run_and_redirects_to_it(client_alice, alice):
    response = client_alice.post(reverse("run_new"), {"task": "Research tea and coffee"})
    run = Run.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("run_detail", args=[run.pk])
    assert run.owner == alice and run.status == "planning" and not run.auto_approve


def test_submit_refuses_an_empty_task_and_keeps_nothing(client_alice):
    response = client_alice.post(reverse("run_new"), {"task": "  "})
    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
    assert Run.objects.count() == 0


def test_submit_refuses_an_oversized_task_and_says_the_limit(client_alice, settings):
    response = client_alice.post(reverse("run_new"), {"task": "x" * 100_000})
    assert response.status_code == 400
    page = response.content.decode()
    assert "The task is 100000 characters long; at most 10000 are allowed." in page
    assert Run.objects.count() == 0
    # The browser is not told to cut what is pasted: the limit is said, not enforced silently.
    textarea = page[page.index('<textarea name="task"') :]
    assert "maxlength" not in textarea[: textarea.index(">")]


def test_post_without_csrf_token_is_refused(alice):
    c = Client(enforce_csrf_checks=True)
    c.force_login(alice)
    response = c.post(reverse("run_new"), {"task": "Research tea"})
    assert response.status_code == 403
    assert Run.objects.count() == 0


def test_run_page_shows_plan_and_approve_button(client_alice, alice):
    run = Run.objects.create(owner=alice, task="Compare tea and coffee")
    run_plan(run.pk)
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "Approve plan and run" in page
    assert 'id="plan-graph-data"' in page
    assert "offline:offline-v1" in page
    for step in run.steps.all():
        assert f'id="step-{step.step_id}"' in page


def test_run_page_htmx_request_gets_the_fragment_only(client_alice, alice):
    run = Run.objects.create(owner=alice, task="Research tea")
    response = client_alice.get(reverse("run_detail", args=[run.pk]), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert 'id="run-header"' in body and "<html" not in body


def test_task_text_is_escaped(client_alice, alice):
    run = Run.objects.create(owner=alice, task="<script>alert(1)</script>")
    body = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_result_markdown_is_rendered_and_sanitized(client_alice, alice):
    run = Run.objects.create(
        owner=alice,
        task="t",
        status="succeeded",
        result="# Title\n\n**bold** <img src=x onerror=alert(1)> [x](javascript:alert(1))",
    )
    body = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "<h1>Title</h1>" in body and "<strong>bold</strong>" in body
    assert "onerror=alert" not in body.replace("&lt;img src=x onerror=alert(1)&gt;", "")
    assert 'href="javascript:' not in body


def test_another_users_run_is_a_404_everywhere(client_alice, make_user):
    bob = make_user("bob")
    run = Run.objects.create(owner=bob, task="Bob's secret task")
    run_plan(run.pk)
    assert client_alice.get(reverse("run_detail", args=[run.pk])).status_code == 404
    assert client_alice.post(reverse("run_approve", args=[run.pk])).status_code == 404
    run.refresh_from_db()
    assert run.status == "awaiting_plan_approval"
    assert "Bob&#x27;s secret task" not in client_alice.get(reverse("run_list")).content.decode()


def test_approve_from_the_page_starts_the_run(client_alice, alice):
    run = Run.objects.create(owner=alice, task="Research tea and coffee")
    run_plan(run.pk)
    response = client_alice.post(reverse("run_approve", args=[run.pk]))
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == "running"


def test_approve_at_the_wrong_time_says_why(client_alice, alice):
    run = Run.objects.create(owner=alice, task="Research tea")
    response = client_alice.post(reverse("run_approve", args=[run.pk]), follow=True)
    assert "This run is planning, so its plan cannot be approved now." in response.content.decode()


def test_history_is_newest_first_and_paginated(client_alice, alice):
    runs = [Run.objects.create(owner=alice, task=f"task number {i}") for i in range(25)]
    first = client_alice.get(reverse("run_list")).content.decode()
    assert "task number 24" in first and "task number 5" in first
    assert "task number 4" not in first
    assert first.index("task number 24") < first.index("task number 23")
    assert "Page 1 of 2" in first
    second = client_alice.get(reverse("run_list") + "?page=2").content.decode()
    assert "task number 4" in second and "task number 0" in second
    assert len(runs) == 25


def test_run_page_keeps_tool_calls_on_the_step_cards(client_alice, alice):
    from planner_ui.services.runs import run_approve_plan
    from tests.services.test_runs import drive

    run = Run.objects.create(owner=alice, task="Compute 1500 * 0.2 + 75")
    run_plan(run.pk)
    run_approve_plan(run.pk)
    drive(run)
    body = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "→ calculator {&quot;expression&quot;:&quot;1500 * 0.2 + 75&quot;}" in body
    assert "← 1500 * 0.2 + 75 = 375" in body
    run.refresh_from_db()
    assert f'data-seq="{run.last_event_seq}"' in body


def test_a_step_s_live_text_can_be_scrolled_from_the_keyboard(client_alice, alice):
    # app.css caps the live text at 14rem and scrolls the rest: a scrolling box a keyboard
    # cannot reach is a serious violation for axe (scrollable-region-focusable), which the
    # accessibility test met whenever a step had written that much by the time it looked.
    run = Run.objects.create(owner=alice, task="Research tea and coffee")
    run_plan(run.pk)
    body = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    cards = run.steps.count()
    live = '<pre class="step-live" hidden aria-live="polite" tabindex="0">'
    assert cards and body.count(live) == cards


def test_re_run_as_a_single_agent_and_compare(client_alice, alice):
    from planner_ui.services.runs import run_approve_plan
    from tests.services.test_runs import drive

    client_alice.post(reverse("run_new"), {"task": "Research tea and coffee"})
    run = Run.objects.get()
    run_plan(run.pk)
    run_approve_plan(run.pk)
    drive(run)
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'id="start-baseline"' in page
    response = client_alice.post(reverse("run_baseline", args=[run.pk]))
    baseline = Run.objects.get(baseline_of=run)
    assert response.status_code == 302 and response["Location"] == reverse(
        "run_detail", args=[baseline.pk]
    )
    drive(baseline)
    compare = client_alice.get(reverse("run_compare", args=[baseline.pk])).content.decode()
    assert 'id="compare-table"' in compare
    baseline.refresh_from_db()
    run.refresh_from_db()
    assert f"<td>{run.model_calls}</td><td>{baseline.model_calls}</td>" in compare
    assert "Single agent: result" in compare


def test_another_user_cannot_start_a_baseline_or_compare(client_alice, make_user):
    bob_run = Run.objects.create(owner=make_user("bob"), task="Bob's task", status="succeeded")
    assert client_alice.post(reverse("run_baseline", args=[bob_run.pk])).status_code == 404
    assert client_alice.get(reverse("run_compare", args=[bob_run.pk])).status_code == 404
    assert not Run.objects.filter(baseline_of=bob_run).exists()


def test_a_step_card_says_whether_each_command_ran_sandboxed(client_alice, alice):
    from planner_ui.services.events import events_append

    run = Run.objects.create(owner=alice, task="Run `ls`")
    run_plan(run.pk)
    step_id = run.steps.first().step_id
    result = {"tool": "shell", "content": "exit 0\n", "is_error": False}
    events_append(
        run.pk,
        [
            ("step.tool_result", {**result, "call_id": "a", "sandboxed": True}, step_id),
            ("step.tool_result", {**result, "call_id": "b", "sandboxed": False}, step_id),
            ("step.tool_result", {**result, "call_id": "c", "tool": "read_file"}, step_id),
        ],
    )
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert page.count('<span class="badge sandboxed"') == 1
    assert page.count('<span class="badge unsandboxed"') == 1
    assert "not sandboxed</span>" in page
