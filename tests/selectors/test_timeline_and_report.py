"""The timeline of a run from its events, and its report as JSON and Markdown."""

from __future__ import annotations

import pytest
from django.urls import reverse

from planner_ui.selectors.estimate import critical_step_ids
from planner_ui.selectors.report import report_markdown, run_report
from planner_ui.selectors.runs import run_graph
from planner_ui.selectors.timeline import run_timeline
from planner_ui.services.runs import run_approve_plan
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

TASK = "Compute 1500 * 0.2 + 75 and save a report to report.md"


@pytest.fixture
def done(make_user):
    run = planned(make_user(), TASK)
    run_approve_plan(run.pk)
    return drive(run)


def test_every_step_that_ran_has_its_queued_then_running_time(done):
    timeline = run_timeline(done)
    # From the planner's start to the synthesis: active time, the wait for approval apart.
    assert timeline.start == done.created_at
    assert done.started_at < timeline.end <= done.finished_at
    assert [gap.reason for gap in timeline.gaps] == ["waiting for approval"]
    assert timeline.seconds < (done.finished_at - done.created_at).total_seconds()
    for row in timeline.rows:
        kinds = [segment.kind for segment in row.segments]
        assert kinds == ["queued", "running"], (row.step_id, kinds)
        queued, running = row.segments
        assert queued.end == running.start and running.end is not None
        assert 0 <= running.left_pct <= 100 and running.width_pct > 0
    # Steps one after another all lie on the critical path, the synthesis last.
    assert [row.critical for row in timeline.rows] == [True] * len(timeline.rows)


def test_a_step_under_way_has_an_open_segment(make_user):
    run = planned(make_user(), TASK)
    run_approve_plan(run.pk)
    first = run_timeline(run).rows[0]
    assert [(s.kind, s.end) for s in first.segments] == [("queued", None)]


def test_the_report_holds_what_a_person_needs_to_keep(done):
    report = run_report(done)
    assert report["task"] == TASK and report["status"] == "succeeded"
    assert [v["number"] for v in report["plan_versions"]] == [1]
    assert report["plan_versions"][0]["approved"]
    compute = next(s for s in report["steps"] if "calculator" in s["tools"])
    assert compute["tool_calls"][0]["tool"] == "calculator"
    assert compute["tool_calls"][1]["content"] == "1500 * 0.2 + 75 = 375"
    assert [f["path"] for f in report["files"]] == ["report.md"]
    markdown = report_markdown(report)
    assert markdown.startswith(f"# Run {done.pk}: succeeded\n\n**Task:**\n\n> {TASK}\n")
    assert "## Plan versions\n\n- v1 by the planner, approved" in markdown
    assert '- → `calculator` `{"expression": "1500 * 0.2 + 75"}`' in markdown
    assert "## Deliverable" in markdown and "## Files\n\n- report.md" in markdown


def test_the_report_downloads_for_its_owner_only(done, client, make_user):
    client.force_login(done.owner)
    answer = client.get(reverse("run_report", args=[done.pk, "md"]))
    assert answer.status_code == 200
    assert answer["Content-Disposition"] == f'attachment; filename="run-{done.pk}.md"'
    assert answer.content.decode().startswith(f"# Run {done.pk}")
    assert client.get(reverse("run_report", args=[done.pk, "json"])).json()["run_id"] == done.pk
    client.force_login(make_user("mallory"))
    assert client.get(reverse("run_report", args=[done.pk, "json"])).status_code == 404
    assert client.get(reverse("run_timeline", args=[done.pk])).status_code == 404


def test_the_timeline_marks_the_graphs_critical_path_not_the_slowest_steps(make_user):
    run = planned(make_user(), "Research tea, coffee and mate, then write a short summary")
    run_approve_plan(run.pk)
    run = drive(run)
    # However long each step really took, both mark the chain with the most model calls.
    path = critical_step_ids(list(run.steps.all()))
    timeline = run_timeline(run)

    assert timeline.critical_path == path
    assert [r.step_id for r in timeline.rows if r.critical] == path
    assert [n["id"] for n in run_graph(run)["nodes"] if n["critical"]] == path
    assert "research-tea" in path and {"research-coffee", "research-mate"}.isdisjoint(path)
