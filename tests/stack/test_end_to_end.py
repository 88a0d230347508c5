"""The whole loop with real parts: Redis, a Celery worker process with four children, the
offline provider taking 0.4 s a model call. Proves from the stored timestamps that independent
branches ran at the same time in different processes."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from datetime import datetime

import pytest
from django.conf import settings

from planner_ui.core.dag import ancestors
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Run
from planner_ui.services.runs import run_approve_plan, run_create
from tests.conftest import child_env, wait_until

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def _finished(run_id: int) -> Run | None:
    run = Run.objects.get(pk=run_id)
    return run if run.is_finished else None


def test_parallel_branches_overlap_on_real_workers(celery_worker_process, make_user):
    run = run_create(
        owner=make_user(),
        options=RunOptions(task="Compare Python and Go for writing a command-line tool"),
    )
    wait_until(
        lambda: Run.objects.get(pk=run.pk).status == RunStatus.AWAITING_PLAN_APPROVAL,
        what="the planner's plan",
    )
    run_approve_plan(run.pk)
    run = wait_until(lambda: _finished(run.pk), timeout=120, what="the run to finish")
    assert run.status == RunStatus.SUCCEEDED, run.error

    steps = {s.step_id: s for s in run.steps.all()}
    assert all(s.status == StepStatus.SUCCEEDED and s.attempts == 1 for s in steps.values())
    deps = {sid: s.depends_on for sid, s in steps.items()}
    independent = [
        (a, b)
        for a, b in itertools.combinations(steps, 2)
        if a not in ancestors(deps, b) and b not in ancestors(deps, a)
    ]
    assert independent, "the plan should have parallel branches"
    for a, b in independent:
        sa, sb = steps[a], steps[b]
        assert sa.started_at < sb.finished_at and sb.started_at < sa.finished_at, (
            f"{a} [{sa.started_at}–{sa.finished_at}] and {b} [{sb.started_at}–{sb.finished_at}]"
            " did not overlap"
        )
        assert sa.worker != sb.worker, "parallel steps should run in different processes"
    for sid, step in steps.items():
        for dep in step.depends_on:
            assert steps[dep].finished_at <= step.started_at, f"{sid} started before {dep} ended"
    assert "Python" in run.result and "Go" in run.result
    seqs = list(run.events.values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))


def test_runtask_json_beside_a_running_worker(celery_worker_process, make_user):
    make_user("demo")
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "runtask",
            "--json",
            "--route",
            "synthesizer=offline",
            "--budget-tokens",
            "1000000",
            "Research the history of tea, then write a short summary",
        ],
        cwd=settings.BASE_DIR,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["status"] == "succeeded"
    assert set(outcome) >= {"run_id", "status", "steps", "tokens", "wall_s"}
    assert outcome["tokens"]["input"] > 0 and outcome["tokens"]["output"] > 0
    assert outcome["wall_s"] > 0
    assert outcome["routes"]["synthesizer"] == "offline:offline-v1"
    assert outcome["cost_usd"] == "0.000000"
    # The planner's one call, and every step's.
    assert outcome["model_calls"] == 1 + sum(s["model_calls"] for s in outcome["steps"])
    for step in outcome["steps"]:
        assert set(step) >= {"id", "role", "status", "started_at", "finished_at", "output"}
        assert step["status"] == "succeeded" and step["output"]
        assert datetime.fromisoformat(step["started_at"]) <= datetime.fromisoformat(
            step["finished_at"]
        )
    run = Run.objects.get(pk=outcome["run_id"])
    assert run.owner.username == "demo"
    # The steps were done by the session's worker, not by one runtask started itself.
    assert all(s.worker for s in run.steps.all())
    assert "No Celery worker answering" not in result.stderr


def test_the_worker_logs_one_line_per_task_and_says_it_is_alive(
    celery_worker_process, make_user, client
):
    run = run_create(owner=make_user(), options=RunOptions(task="Compute 6 * 7", auto_approve=True))
    run = wait_until(lambda: _finished(run.pk), timeout=60, what="the run to finish")
    log = (settings.VAR_DIR / "worker-test.log").read_text()
    assert f"plan_run run {run.pk}: success in " in log
    for step in run.steps.all():
        # Sent as a task of its own, or run next by the worker that ended its parent.
        assert re.search(
            rf"execute_step run {run.pk} step {step.step_id}"
            rf"(: success| \(carried on from [\w-]+\): done) in ",
            log,
        ), step.step_id
    # Celery's own two lines per task are quiet.
    assert not re.search(r"Task planner_ui\.tasks\.\w+\[[^\]]+\] (received|succeeded)", log)
    staff = make_user("root")
    staff.is_staff = True
    staff.save()
    client.force_login(staff)  # only staff see which workers are alive
    ready = client.get("/readyz").json()
    assert ready["ready"] and any(
        n.startswith("testworker@") for n in ready["checks"]["workers"]["alive"]
    )
