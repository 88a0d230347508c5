"""An experiment whose worker is SIGKILLed mid-way finishes on the next worker with every
slot run once and counted once."""

from __future__ import annotations

import pytest
from django.conf import settings

from planner_ui.core.evaluation import arm_parse, shipped_suites, suite_load
from planner_ui.models import Approval, Experiment, ExperimentRun, Run
from planner_ui.selectors.evaluations import experiment_results
from planner_ui.services.evaluations import experiment_create
from tests.conftest import wait_until
from tests.stack.test_crash import Workers, workers  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.stack,
    pytest.mark.crash,
    pytest.mark.django_db(transaction=True),
]

FAST = {"AGENTSITE_OFFLINE_LATENCY_S": "0.5", "AGENTSITE_SWEEP_S": "2"}


def _state(experiment: Experiment) -> str:
    """What an experiment that did not finish is waiting for: each slot, its run, the run's
    unfinished steps and open questions, and the end of every worker's log."""
    lines = [f"experiment {experiment.pk}: {experiment.status}, paused_at={experiment.paused_at}"]
    for slot in experiment.slots.select_related("run").order_by("pk"):
        run = slot.run
        lines.append(
            f"slot {slot.pk} {slot.arm}/{slot.task_index}: passed={slot.passed} "
            f"judged_end={slot.judged_end} run={run and (run.pk, run.status, run.finished_at)}"
        )
        if run is None or run.is_finished:
            continue
        lines.append(f"  replanning={run.replanning} paused={run.paused_at}")
        for step in run.steps.exclude(status__in=["succeeded", "skipped"]):
            lines.append(
                f"  step {step.step_id}: {step.status} worker={step.worker} "
                f"heartbeat={step.heartbeat_at} queued={step.queued_at}"
            )
        for approval in Approval.objects.filter(run=run, state=Approval.State.PENDING):
            lines.append(f"  waits for approval {approval.call_key} ({approval.kind})")
        for event in run.events.order_by("-seq")[:8]:
            lines.append(f"  event {event.seq} {event.type} {event.step_id}")
    for log in sorted(settings.VAR_DIR.glob("worker-crash*.log")):
        tail = log.read_text(errors="replace").splitlines()[-30:]
        lines += [f"--- {log.name}", *tail]
    return "\n".join(lines)


def finish(experiment: Experiment) -> None:
    def ended() -> bool:
        experiment.refresh_from_db()
        return experiment.is_finished

    try:
        wait_until(ended, timeout=240, what="the experiment to finish after the kill")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_state(experiment)}") from None
    assert experiment.status == Experiment.Status.FINISHED


def test_an_experiment_killed_mid_way_finishes_with_every_slot_counted_once(
    workers: Workers,  # noqa: F811
    make_user,
):
    first = workers.start(**FAST)
    suite = suite_load(shipped_suites()["parallel"])
    experiment = experiment_create(
        make_user(), suite, [arm_parse("agent"), arm_parse("plan")], concurrency=2
    )
    slots = ExperimentRun.objects.filter(experiment=experiment)
    wait_until(
        lambda: (
            slots.filter(passed__isnull=False).count() >= 2
            and slots.filter(passed__isnull=True, run__isnull=False).exists()
        ),
        timeout=90,
        what="two slots checked and another running",
    )
    workers.kill(first)
    checked_at_kill = slots.filter(passed__isnull=False).count()
    assert checked_at_kill < slots.count()
    workers.start(**FAST)

    finish(experiment)
    assert slots.filter(passed__isnull=True).count() == 0
    assert slots.filter(run__isnull=True).count() == 0
    # One run per slot: nothing started twice, nothing left over.
    runs = Run.objects.filter(owner=experiment.owner)
    assert runs.count() == slots.count() == 2 * len(suite.tasks)
    assert all(run.is_finished for run in runs)
    results = experiment_results(experiment)
    assert (results.checked, results.total) == (8, 8)
    assert [arm.runs for arm in results.arms] == [4, 4]


JUDGED = """
name: judged
tasks:
  - id: product
    task: Compute 17 * 23
    checks:
      - {type: judge, rubric: 'States the product, "391".'}
"""


def test_a_judge_killed_mid_call_judges_again_on_the_next_worker(
    workers: Workers,  # noqa: F811
    make_user,
):
    from planner_ui.stores.redis_store import redis_client, redis_key

    # Slow model calls, the judge's too: the kill lands while it judges the first run.
    first = workers.start(AGENTSITE_OFFLINE_LATENCY_S="4", AGENTSITE_SWEEP_S="2")
    experiment = experiment_create(
        make_user(), suite_load(JUDGED), [arm_parse("agent")], repeat=2, concurrency=1
    )
    slots = ExperimentRun.objects.filter(experiment=experiment)
    judging = slots.first()
    wait_until(
        lambda: bool(redis_client().exists(redis_key("lease", "judge", judging.pk))),
        timeout=90,
        what="the judge at work on the first run",
    )
    workers.kill(first)
    judging.refresh_from_db()
    assert (judging.passed, judging.judged) == (None, None)
    workers.start(**FAST)

    finish(experiment)
    for slot in slots:
        assert slot.passed is True and slot.checks == [[True, 'judge: pass: It has "391".']]
        # The killed call was never answered, so never recorded: one call per slot.
        assert slot.judge_calls == 1
    assert Run.objects.filter(owner=experiment.owner).count() == 2
    results = experiment_results(experiment)
    assert (results.checked, results.total) == (2, 2)
    assert results.arms[0].judge_calls == 2
