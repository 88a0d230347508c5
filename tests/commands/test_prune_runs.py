"""prune_runs deletes finished runs older than asked, with all they hold; never a live one."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from planner_ui.core.status import RunStatus
from planner_ui.models import PlanVersion, Run, RunEvent, RunFile, Step

pytestmark = pytest.mark.django_db


def make_run(owner, status: str, ended_days_ago: float) -> Run:
    when = timezone.now() - timedelta(days=ended_days_ago)
    run = Run.objects.create(owner=owner, task=status, status=status)
    version = PlanVersion.objects.create(run=run, number=1, author="planner", plan={})
    Run.objects.filter(pk=run.pk).update(
        approved_plan=version, created_at=when, finished_at=when if status != "running" else None
    )
    Step.objects.create(run=run, step_id="s", title="s", instruction="x", role="writer")
    RunEvent.objects.create(run=run, seq=1, type="run.status", payload={"status": status})
    RunFile.objects.create(run=run, path="a.md", content=b"a", size=1, sha256="0" * 64)
    return run


def prune(*args: str) -> str:
    out = StringIO()
    call_command("prune_runs", *args, stdout=out)
    return out.getvalue()


def test_finished_runs_older_than_asked_go_with_all_they_hold(make_user):
    owner = make_user()
    old = make_run(owner, RunStatus.SUCCEEDED, 40)
    failed = make_run(owner, RunStatus.FAILED, 31)
    recent = make_run(owner, RunStatus.SUCCEEDED, 5)
    running = make_run(owner, RunStatus.RUNNING, 90)

    said = prune("--older-than", "30d")

    assert said.startswith("Deleted 2 runs, 2 steps, 2 events, 0 model calls, 2 files")
    assert set(Run.objects.values_list("pk", flat=True)) == {recent.pk, running.pk}
    assert not Step.objects.filter(run_id__in=[old.pk, failed.pk]).exists()
    assert RunFile.objects.count() == 2


def test_a_dry_run_says_what_would_go_and_deletes_nothing(make_user):
    make_run(make_user(), RunStatus.CANCELLED, 3)
    assert prune("--older-than", "48h", "--dry-run").startswith("Would delete 1 runs")
    assert Run.objects.count() == 1


def test_an_unreadable_age_says_how_to_write_one():
    with pytest.raises(CommandError, match=r"--older-than '30 days': write a whole number"):
        prune("--older-than", "30 days")
