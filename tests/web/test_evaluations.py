"""The evaluation pages: suites pasted, imported, edited and exported; an experiment started
from a suite, its results with both plots, its exports; CSRF, escaping and ownership."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client
from django.urls import reverse

from planner_ui.core.evaluation import arm_parse, shipped_suites, suite_load
from planner_ui.models import EvaluationSuite, Experiment
from planner_ui.services.evaluations import experiment_create, suite_save
from tests.services.test_evaluations import run_to_the_end

pytestmark = pytest.mark.django_db

HOSTILE = """name: hostile
tasks:
  - id: xss
    task: "Say <script>alert(1)</script>"
    checks: [{type: contains, text: "<b>bold</b>"}]
"""


def test_the_nav_leads_to_evaluations_and_offers_the_shipped_suites(client_alice):
    page = client_alice.get(reverse("home")).content.decode()
    assert f'href="{reverse("evaluations")}" id="evaluations-link"' in page
    page = client_alice.get(reverse("evaluations")).content.decode()
    assert 'data-shipped="parallel"' in page and 'data-shipped="sequential"' in page
    form = client_alice.get(reverse("suite_new") + "?from=sequential").content.decode()
    assert "id: compute-then-save" in form


def test_a_suite_is_saved_from_pasted_yaml_edited_and_exported(client_alice, alice):
    response = client_alice.post(reverse("suite_new"), {"content": shipped_suites()["parallel"]})
    suite = EvaluationSuite.objects.get(owner=alice)
    assert response["Location"] == reverse("suite_detail", args=[suite.pk])
    page = client_alice.get(response["Location"]).content.decode()
    assert "4 tasks" in page and 'id="experiment-form"' in page
    edited = shipped_suites()["parallel"].replace("name: parallel", "name: mine")
    client_alice.post(reverse("suite_detail", args=[suite.pk]), {"content": edited})
    suite.refresh_from_db()
    assert (suite.name, suite.content) == ("mine", edited)
    yaml_export = client_alice.get(reverse("suite_export", args=[suite.pk, "yaml"]))
    assert yaml_export.content.decode() == edited
    assert yaml_export["Content-Disposition"] == 'attachment; filename="mine.yaml"'
    exported = json.loads(
        client_alice.get(reverse("suite_export", args=[suite.pk, "json"])).content
    )
    assert exported["name"] == "mine" and len(exported["tasks"]) == 4
    assert suite_load(json.dumps(exported)) == suite_load(edited)


def test_a_bad_suite_is_refused_with_the_reason_and_the_text_kept(client_alice):
    text = "name: x\ntasks: [{id: a, task: '<i>t</i>', checks: [{type: regex, pattern: '('}]}]"
    response = client_alice.post(reverse("suite_new"), {"content": text})
    assert response.status_code == 400
    page = response.content.decode()
    assert "tasks.0.checks.0.regex.pattern: Value error, not a regular expression" in page
    assert "&lt;i&gt;t&lt;/i&gt;" in page and "<i>t</i>" not in page
    assert not EvaluationSuite.objects.exists()


def test_an_experiment_starts_from_the_form_and_its_results_show_both_plots(client_alice, alice):
    suite = suite_save(alice, shipped_suites()["parallel"])
    response = client_alice.post(
        reverse("experiment_new", args=[suite.pk]),
        {"arm": ["agent", "plan"], "more_arms": "", "repeat": "1", "concurrency": "2"},
    )
    experiment = Experiment.objects.get()
    assert response["Location"] == reverse("experiment_detail", args=[experiment.pk])
    assert [a["name"] for a in experiment.arms] == ["agent", "plan"]
    running = client_alice.get(response["Location"]).content.decode()
    assert 'hx-trigger="every 2s"' in running and 'id="cancel-experiment"' in running
    run_to_the_end(experiment)
    page = client_alice.get(response["Location"]).content.decode()
    assert 'hx-trigger="every 2s"' not in page
    assert "8 of 8 runs checked" in page
    assert page.count('<g class="point arm-') == 2
    assert page.count('<rect class="bar arm-') == 8
    assert "tokens per run (nothing was priced)" in page
    first_run = experiment.slots.order_by("task_index", "arm").first().run_id
    assert f'href="{reverse("run_detail", args=[first_run])}"' in page
    part = client_alice.get(response["Location"], HTTP_HX_REQUEST="true").content.decode()
    assert 'id="experiment-results"' in part
    assert "<html" not in part


def test_the_results_export_as_csv_and_json(client_alice, alice):
    suite = suite_load(shipped_suites()["sequential"])
    experiment = run_to_the_end(experiment_create(alice, suite, [arm_parse("plan")]))
    data = json.loads(
        client_alice.get(reverse("experiment_export", args=[experiment.pk, "json"])).content
    )
    assert data["arms"][0]["runs"] == 4 and data["status"] == "finished"
    response = client_alice.get(reverse("experiment_export", args=[experiment.pk, "csv"]))
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["task"] for r in rows] == [t.id for t in suite.tasks]
    (chain,) = [r for r in rows if r["task"] == "arithmetic-chain"]
    assert chain["passed"] == "False" and "has no 27" in chain["checks"]
    assert (chain["rechecks"], chain["judge_calls"], chain["judge_tokens"]) == ("0", "0", "0")


def test_the_csv_gives_what_judging_cost_apart_from_the_run(client_alice, alice):
    suite = suite_load(
        "name: judged\ntasks:\n  - id: product\n    task: Compute 17 * 23\n"
        "    checks: [{type: judge, rubric: 'Says \"391\".'}]\n"
    )
    experiment = run_to_the_end(experiment_create(alice, suite, [arm_parse("agent")]))
    response = client_alice.get(reverse("experiment_export", args=[experiment.pk, "csv"]))
    (row,) = csv.DictReader(io.StringIO(response.content.decode()))
    slot = experiment.slots.get()
    assert row["passed"] == "True" and row["checks"] == 'judge: pass: It has "391".'
    assert row["judge_calls"] == "1"
    assert int(row["judge_tokens"]) == slot.judge_tokens_in + slot.judge_tokens_out > 0
    assert row["model_calls"] == str(slot.run.model_calls)


def test_user_text_is_escaped_on_the_results(client_alice, alice):
    experiment = experiment_create(alice, suite_load(HOSTILE), [arm_parse("plan")])
    page = client_alice.get(reverse("experiment_detail", args=[experiment.pk])).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_another_persons_suites_and_experiments_are_not_found(client_alice, make_user):
    bob = make_user("bob")
    suite = suite_save(bob, shipped_suites()["parallel"])
    experiment = experiment_create(bob, suite_load(suite.content), [arm_parse("plan")])
    for url in (
        reverse("suite_detail", args=[suite.pk]),
        reverse("suite_export", args=[suite.pk, "yaml"]),
        reverse("experiment_detail", args=[experiment.pk]),
        reverse("experiment_export", args=[experiment.pk, "csv"]),
    ):
        assert client_alice.get(url).status_code == 404, url
    for url in (
        reverse("suite_detail", args=[suite.pk]),
        reverse("experiment_new", args=[suite.pk]),
        reverse("experiment_cancel", args=[experiment.pk]),
    ):
        assert client_alice.post(url, {"content": "x"}).status_code == 404, url
    assert Experiment.objects.count() == 1
    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.RUNNING


def test_posts_without_a_csrf_token_are_refused(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(reverse("suite_new"), {"content": shipped_suites()["parallel"]})
    assert response.status_code == 403
    assert not EvaluationSuite.objects.exists()


def test_an_experiment_can_be_cancelled_and_a_bad_form_says_why(client_alice, alice):
    suite = suite_save(alice, shipped_suites()["parallel"])
    response = client_alice.post(
        reverse("experiment_new", args=[suite.pk]), {"arm": ["plan"], "repeat": "x"}
    )
    assert response["Location"] == reverse("suite_detail", args=[suite.pk])
    page = client_alice.get(response["Location"]).content.decode()
    assert "Repeat: write a whole number." in page
    experiment = experiment_create(alice, suite_load(suite.content), [arm_parse("plan")])
    client_alice.post(reverse("experiment_cancel", args=[experiment.pk]))
    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.CANCELLED
    assert experiment.stop_reason == "Cancelled by alice."


def test_an_experiment_is_paused_and_resumed_from_its_page(client_alice, alice):
    experiment = experiment_create(
        alice, suite_load(shipped_suites()["parallel"]), [arm_parse("agent")]
    )
    url = reverse("experiment_detail", args=[experiment.pk])
    assert 'id="pause-experiment"' in client_alice.get(url).content.decode()
    client_alice.post(reverse("experiment_pause", args=[experiment.pk]))
    page = client_alice.get(url).content.decode()
    assert 'id="experiment-paused"' in page and 'id="resume-experiment"' in page
    client_alice.post(reverse("experiment_pause", args=[experiment.pk]))
    assert "This experiment is paused already" in client_alice.get(url).content.decode()
    client_alice.post(reverse("experiment_resume", args=[experiment.pk]))
    experiment.refresh_from_db()
    assert experiment.paused_at is None


def test_a_run_of_an_experiment_says_so_on_its_page(client_alice, alice):
    experiment = experiment_create(
        alice, suite_load(shipped_suites()["parallel"]), [arm_parse("plan")]
    )
    run_to_the_end(experiment)
    slot = experiment.slots.get(task_index=1)
    page = client_alice.get(reverse("run_detail", args=[slot.run_id])).content.decode()
    assert (
        f'A run of <a href="{reverse("experiment_detail", args=[experiment.pk])}">'
        f"experiment {experiment.pk}</a>: arm plan, task 2, repetition 1." in page
    )


def test_a_suite_is_imported_from_a_file(client_alice, alice):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("s.yaml", shipped_suites()["sequential"].encode())
    response = client_alice.post(reverse("suite_new"), {"content": "", "file": upload})
    suite = EvaluationSuite.objects.get(owner=alice)
    assert response["Location"] == reverse("suite_detail", args=[suite.pk])
    assert suite.content == shipped_suites()["sequential"]
    binary = SimpleUploadedFile("s.yaml", b"\xff\xfe\x00")
    response = client_alice.post(reverse("suite_new"), {"content": "", "file": binary})
    assert response.status_code == 400
    assert "The file is not text in UTF-8" in response.content.decode()


def test_a_deleted_suite_leaves_its_experiments_whole(client_alice, alice, make_user):
    suite = suite_save(alice, shipped_suites()["parallel"])
    experiment = experiment_create(
        alice, suite_load(suite.content), [arm_parse("plan")], suite_row=suite
    )
    bob = Client()
    bob.force_login(make_user("bob"))
    assert bob.post(reverse("suite_delete", args=[suite.pk])).status_code == 404
    response = client_alice.post(reverse("suite_delete", args=[suite.pk]))
    assert response["Location"] == reverse("evaluations")
    assert not EvaluationSuite.objects.exists()
    page = client_alice.get(reverse("experiment_detail", args=[experiment.pk])).content.decode()
    assert f"Experiment {experiment.pk} on parallel" in page
    assert client_alice.get(reverse("suite_delete", args=[suite.pk])).status_code == 405
