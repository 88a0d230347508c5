"""Plan template pages: save a run's plan with a parameter, the generated form, runs listed
with their values and the link back; escaped output, CSRF, and 404 for others' templates."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from planner_ui.core.status import RunStatus
from planner_ui.models import PlanTemplate, Run
from planner_ui.services.runs import run_approve_plan, run_plan
from planner_ui.services.templates import template_save
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db

TASK = "Research the weather in Paris, then write a short summary"


@pytest.fixture
def done(alice) -> Run:
    run = Run.objects.create(owner=alice, task=TASK)
    run_plan(run.pk)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


def save(client: Client, run: Run, **fields: str):
    data = {"name": "Weather", "task": run.task, "version": "1", **fields}
    return client.post(reverse("template_new", args=[run.pk]), data)


def test_save_from_the_run_page_then_run_for_a_city(client_alice, done) -> None:
    page = client_alice.get(reverse("run_detail", args=[done.pk])).content.decode()
    assert reverse("template_new", args=[done.pk]) in page
    form = client_alice.get(reverse("template_new", args=[done.pk])).content.decode()
    assert TASK in form
    response = save(client_alice, done, literal_0="Paris", parameter_0="city")
    template = PlanTemplate.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("template_detail", args=[template.pk])
    page = client_alice.get(response["Location"]).content.decode()
    assert 'name="param_city"' in page and 'placeholder="Paris"' in page
    assert "Research the weather in {city}" in page
    response = client_alice.post(
        reverse("template_run", args=[template.pk]), {"version": "1", "param_city": "Lyon"}
    )
    run = Run.objects.get(template_version__template=template)
    assert response["Location"] == reverse("run_detail", args=[run.pk])
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'id="from-template"' in page and "Weather v1</a>" in page
    assert "<code>city</code> = Lyon" in page
    listing = client_alice.get(reverse("template_detail", args=[template.pk])).content.decode()
    assert f'href="{reverse("run_detail", args=[run.pk])}"' in listing
    assert "<code>city</code> = Lyon" in listing
    templates = client_alice.get(reverse("template_list")).content.decode()
    assert "Weather</a>" in templates


def test_refused_values_are_shown_at_their_field(client_alice, done) -> None:
    save(client_alice, done, literal_0="Paris", parameter_0="city")
    template = PlanTemplate.objects.get()
    response = client_alice.post(
        reverse("template_run", args=[template.pk]), {"version": "1", "param_city": "a" * 501}
    )
    assert response.status_code == 400
    assert "city: it is 501 characters; at most 500" in response.content.decode()
    assert not Run.objects.filter(template_version__template=template).exists()


def test_save_errors_are_shown_and_nothing_is_saved(client_alice, done) -> None:
    response = save(client_alice, done, literal_0="Berlin", parameter_0="city")
    assert response.status_code == 400
    assert "{city}: &#x27;Berlin&#x27; is not in the task" in response.content.decode()
    response = save(client_alice, done, literal_0="Paris")
    assert "Give both the text and the parameter&#x27;s name." in response.content.decode()
    assert not PlanTemplate.objects.exists()


def test_a_new_version_sets_type_default_and_check(client_alice, done) -> None:
    save(client_alice, done, literal_0="Paris", parameter_0="city")
    template = PlanTemplate.objects.get()
    url = reverse("template_version_new", args=[template.pk])
    data = {
        "task": "Research the weather in {city} for {days} days",
        "type_city": "choice",
        "label_city": "City",
        "default_city": "Paris",
        "check_city": "Paris, Lyon",
        "note": "choice of cities",
    }
    assert client_alice.post(url, data).status_code == 302
    latest = template.versions.get(number=2)
    assert latest.parameters[0]["choices"] == ["Paris", "Lyon"]
    assert [p["name"] for p in latest.parameters] == ["city", "days"]
    page = client_alice.get(reverse("template_detail", args=[template.pk])).content.decode()
    assert '<option value="Lyon">Lyon</option>' in page
    assert "Changes from v1" in page
    assert "Parameters added: <code>days</code>" in page
    assert "<li><code>city</code> type: <del>text</del> → <ins>choice</ins></li>" in page
    data.update(type_days="integer", check_days="5")
    response = client_alice.post(url, data)
    assert response.status_code == 400
    assert "write a range as min..max" in response.content.decode()


def test_output_is_escaped(client_alice, alice) -> None:
    plan = {
        "goal": "<b>goal</b>",
        "steps": [
            {
                "id": "a",
                "title": "<script>x</script> {who}",
                "instruction": "Greet {who}.",
                "role": "writer",
            }
        ],
    }
    saved = template_save(
        user=alice,
        name="<i>name</i>",
        task="Say hi to {who}",
        plan=plan,
        parameters=[{"name": "who", "label": "<u>Who</u>"}],
    )
    page = client_alice.get(reverse("template_detail", args=[saved.template_id])).content.decode()
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "<i>name</i>" not in page and "<u>Who</u>" not in page


def test_others_templates_are_404_and_posts_need_csrf(client_alice, alice, make_user) -> None:
    saved = template_save(
        user=alice,
        name="Mine",
        task="Hi {who}",
        plan={"steps": [{"id": "a", "title": "A", "instruction": "Hi {who}", "role": "writer"}]},
    )
    bob = Client()
    bob.force_login(make_user("bob"))
    template_id = saved.template_id
    assert bob.get(reverse("template_detail", args=[template_id])).status_code == 404
    run_url = reverse("template_run", args=[template_id])
    assert bob.post(run_url, {"param_who": "x"}).status_code == 404
    version_url = reverse("template_version_new", args=[template_id])
    assert bob.post(version_url, {"task": "x"}).status_code == 404
    assert "Mine" not in bob.get(reverse("template_list")).content.decode()
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    assert strict.post(run_url, {"param_who": "x"}).status_code == 403
    assert not Run.objects.exists()


def test_only_staff_share_and_then_others_may_run_but_not_change(
    client_alice, alice, make_user
) -> None:
    saved = template_save(
        user=alice,
        name="Mine",
        task="Hi {who}",
        plan={"steps": [{"id": "a", "title": "A", "instruction": "Hi {who}", "role": "writer"}]},
    )
    share_url = reverse("template_share", args=[saved.template_id])
    client_alice.post(share_url, {"shared": "1"})
    assert not PlanTemplate.objects.get().shared
    staff_user = make_user("staff")
    staff_user.is_staff = True
    staff_user.save()
    staff = Client()
    staff.force_login(staff_user)
    staff.post(share_url, {"shared": "1"})
    assert PlanTemplate.objects.get().shared
    bob = Client()
    bob.force_login(make_user("bob"))
    page = bob.get(reverse("template_detail", args=[saved.template_id])).content.decode()
    assert "Shared by alice" in page and 'id="version-form"' not in page
    response = bob.post(
        reverse("template_run", args=[saved.template_id]), {"version": "1", "param_who": "Bo"}
    )
    assert response.status_code == 302 and Run.objects.get().task == "Hi Bo"
    version_url = reverse("template_version_new", args=[saved.template_id])
    assert bob.post(version_url, {"task": "x"}).status_code == 404


def test_the_webhook_token_is_shown_once_and_its_runs_are_told_apart(client_alice, alice) -> None:
    saved = template_save(
        user=alice,
        name="Mine",
        task="Hi {who}",
        plan={"steps": [{"id": "a", "title": "A", "instruction": "Hi {who}", "role": "writer"}]},
    )
    url = reverse("template_detail", args=[saved.template_id])
    client_alice.post(reverse("template_webhook", args=[saved.template_id]), {"action": "make"})
    response = client_alice.get(url)
    page = response.content.decode()
    assert response["Cache-Control"] == "no-store"
    token = page.split('id="new-webhook-token">')[1].split("<")[0]
    assert token.startswith("whk_")
    assert "approves nothing" in page
    assert token not in client_alice.get(url).content.decode()
    hook = Client(headers={"Authorization": f"Bearer {token}"}).post(
        f"/api/v1/hooks/templates/{saved.template_id}",
        {"who": "Ann"},
        content_type="application/json",
    )
    assert hook.status_code == 201
    page = client_alice.get(url).content.decode()
    assert '<td class="template-trigger">the webhook</td>' in page
    client_alice.post(reverse("template_webhook", args=[saved.template_id]), {"action": "off"})
    assert not PlanTemplate.objects.get().webhook_digest


def test_a_version_downloads_as_json_and_imports_back(client_alice, alice, make_user) -> None:
    saved = template_save(
        user=alice,
        name="Mine",
        task="Hi {who}",
        plan={"steps": [{"id": "a", "title": "A", "instruction": "Hi {who}", "role": "writer"}]},
        parameters=[{"name": "who", "default": "Ann"}],
    )
    response = client_alice.get(reverse("template_json", args=[saved.template_id, 1]))
    assert response["Content-Disposition"] == (
        f'attachment; filename="template-{saved.template_id}-v1.json"'
    )
    text = response.content.decode()
    response = client_alice.post(reverse("template_list"), {"name": "Copy", "text": text})
    copy = PlanTemplate.objects.get(name="Copy")
    assert response["Location"] == reverse("template_detail", args=[copy.pk])
    version = copy.versions.get()
    assert (version.task, version.plan, version.parameters) == (
        saved.task,
        saved.plan,
        saved.parameters,
    )
    assert version.note == "imported as JSON"
    bad = client_alice.post(reverse("template_list"), {"name": "Bad", "text": '{"plan": []}'})
    assert bad.status_code == 400
    assert "the JSON must be an object with" in bad.content.decode()
    bob = Client()
    bob.force_login(make_user("bob"))
    assert bob.get(reverse("template_json", args=[saved.template_id, 1])).status_code == 404


def test_only_the_owner_deletes_and_the_runs_stay(client_alice, alice, make_user) -> None:
    saved = template_save(
        user=alice,
        name="Mine",
        task="Hi {who}",
        plan={"steps": [{"id": "a", "title": "A", "instruction": "Hi {who}", "role": "writer"}]},
    )
    PlanTemplate.objects.update(shared=True)
    client_alice.post(reverse("template_run", args=[saved.template_id]), {"param_who": "Ann"})
    url = reverse("template_delete", args=[saved.template_id])
    bob = Client()
    bob.force_login(make_user("bob"))
    assert bob.post(url).status_code == 404
    assert client_alice.post(url)["Location"] == reverse("template_list")
    assert not PlanTemplate.objects.exists()
    run = Run.objects.get()
    assert run.template_version is None and run.template_values == {"who": "Ann"}
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "From a template since deleted, with <code>who</code> = Ann" in page


def test_the_triggers_policy_is_shown_set_and_followed(client_alice, alice, settings) -> None:
    settings.AGENTSITE_DEFAULT_BUDGET_TOKENS = 50_000
    saved = template_save(
        user=alice,
        name="Mine",
        task="Hi {who}",
        plan={"steps": [{"id": "a", "title": "A", "instruction": "Hi {who}", "role": "writer"}]},
    )
    url = reverse("template_detail", args=[saved.template_id])
    page = client_alice.get(url).content.decode()
    assert "asks before every irreversible call" in page
    assert 'name="budget_tokens" value="50000"' in page
    policy_url = reverse("template_trigger_policy", args=[saved.template_id])
    client_alice.post(policy_url, {"tool_policy": "auto", "auto_tools": ["send_email"]})
    page = client_alice.get(url).content.decode()
    assert "runs send_email without asking; asks for the rest" in page
    response = client_alice.post(policy_url, {"tool_policy": "auto"})
    assert PlanTemplate.objects.get().trigger_auto_tools == ["send_email"]
    errors = client_alice.get(response["Location"]).content.decode()
    assert "Choose the tools to run without asking, or ask for every call." in errors
    client_alice.post(reverse("template_webhook", args=[saved.template_id]), {"action": "make"})
    token = client_alice.get(url).content.decode().split('id="new-webhook-token">')[1]
    hook = Client(headers={"Authorization": f"Bearer {token.split('<')[0]}"}).post(
        f"/api/v1/hooks/templates/{saved.template_id}", {"who": "Ann"}, "application/json"
    )
    run = Run.objects.get(pk=hook.json()["run_id"])
    assert (run.tool_policy, run.auto_tools) == ("auto", ["send_email"])
    assert run.budget_tokens == 50_000 and run.status == RunStatus.AWAITING_PLAN_APPROVAL


def test_the_form_can_ask_the_planner_to_adapt_the_plan(client_alice, alice) -> None:
    saved = template_save(
        user=alice,
        name="Mine",
        task="Hi {who}",
        plan={"steps": [{"id": "a", "title": "A", "instruction": "Hi {who}", "role": "writer"}]},
    )
    response = client_alice.post(
        reverse("template_run", args=[saved.template_id]),
        {"version": "1", "param_who": "Ann", "adapt": "on", "auto_approve": "on"},
    )
    run = Run.objects.get()
    assert response["Location"] == reverse("run_detail", args=[run.pk])
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL
    assert "who = Ann" in run.proposals.get().note


def test_the_schedule_is_set_on_the_page_with_its_values(client_alice, alice) -> None:
    saved = template_save(
        user=alice,
        name="Mine",
        task="Hi {who}",
        plan={"steps": [{"id": "a", "title": "A", "instruction": "Hi {who}", "role": "writer"}]},
    )
    url = reverse("template_schedule", args=[saved.template_id])
    bad = client_alice.post(url, {"schedule-schedule": "every 1 hour"})
    assert bad.status_code == 400
    assert "who: a value is required" in bad.content.decode()
    bad = client_alice.post(url, {"schedule-schedule": "hourly", "schedule-param_who": "Ann"})
    assert "Write &quot;every 30 minutes&quot;" in bad.content.decode()
    ok = client_alice.post(url, {"schedule-schedule": "0 8 * * 1-5", "schedule-param_who": "Ann"})
    assert ok.status_code == 302
    template = PlanTemplate.objects.get()
    assert (template.schedule, template.schedule_values) == ("0 8 * * 1-5", {"who": "Ann"})
    page = client_alice.get(reverse("template_detail", args=[template.pk])).content.decode()
    assert "Runs <strong>0 8 * * 1-5</strong>; next at" in page
    assert 'name="schedule-param_who" value="Ann"' in page
    client_alice.post(url, {"schedule-schedule": ""})
    assert PlanTemplate.objects.get().next_run_at is None


def test_the_webhooks_mapping_is_set_on_the_page(client_alice, alice) -> None:
    saved = template_save(
        user=alice,
        name="Tickets",
        task="Triage {title}",
        plan={
            "steps": [{"id": "a", "title": "A", "instruction": "Triage {title}", "role": "writer"}]
        },
    )
    action = reverse("template_webhook_mapping", args=[saved.template_id])
    response = client_alice.post(action, {"mapping": "title = $.ticket.title"}, follow=True)
    page = response.content.decode()
    assert "The webhook reads its values through the mapping." in page
    assert ">title = $.ticket.title</textarea>" in page
    assert PlanTemplate.objects.get().webhook_mapping == {"title": "$.ticket.title"}

    response = client_alice.post(action, {"mapping": "mood = $.x\ntitle = ticket"}, follow=True)
    assert "The mapping was not saved: line 2: &#x27;ticket&#x27; does not start" in (
        response.content.decode()
    )
    assert PlanTemplate.objects.get().webhook_mapping == {"title": "$.ticket.title"}
    response = client_alice.post(action, {"mapping": "mood = $.x"}, follow=True)
    assert "mood: not a parameter of this template; its parameters: title" in (
        response.content.decode()
    )
    page = client_alice.post(action, {"mapping": ""}, follow=True).content.decode()
    assert "The webhook&#x27;s body is the values themselves." in page
    assert 'placeholder="city = $.ticket.city"></textarea>' in page  # empty again
    assert PlanTemplate.objects.get().webhook_mapping == {}
