"""A worker whose clock is 30 s behind the others', under libfaketime: its healthy steps are not
taken over, since heartbeats are stamped and compared on the database's clock alone.

Beat and a second worker with the right time sweep too, as they would on other machines."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from agentsite import embedded
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Run, RunEvent, Step
from planner_ui.services.runs import run_create
from tests.conftest import child_env, wait_until

pytestmark = [
    pytest.mark.stack,
    pytest.mark.database,
    pytest.mark.crash,  # workers of its own, before the session's worker starts
    pytest.mark.django_db(transaction=True),
]

BEHIND_S = 30


def libfaketime() -> str:
    """The preloaded library of Debian's `faketime` package (`make test` installs it)."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
    if not found:
        pytest.skip("libfaketime is not installed (Debian: apt-get install faketime)")
    return found[0]


@pytest.fixture
def fleet(redis_url) -> Iterator[dict]:
    if connection.vendor != "postgresql":
        pytest.skip(
            "SQLite runs inside each process, so its clock is the worker's own: one machine "
            "only. Runs in make test's PostgreSQL pass."
        )
    from agentsite.celery import app

    app.control.purge()
    env = child_env(
        AGENTSITE_OFFLINE_LATENCY_S="2",
        AGENTSITE_STEP_LEASE_S="6",  # well under the skew: a clock's error would show
        AGENTSITE_SWEEP_S="1",
        CELERY_VISIBILITY_TIMEOUT="3600",
    )
    behind = {
        **env,
        "LD_PRELOAD": libfaketime(),
        "FAKETIME": f"-{BEHIND_S}s",
        # The wall clock only: timeouts and timers keep their pace.
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(Path(__file__).parent / "faketime"), env.get("PYTHONPATH")])
        ),
    }
    logs = settings.VAR_DIR
    procs = {
        "behind": embedded.start_worker(
            env=behind, concurrency=2, hostname="behind@%h", log_path=logs / "worker-behind.log"
        ),
        "on-time": embedded.start_worker(
            env=env, concurrency=2, hostname="ontime@%h", log_path=logs / "worker-ontime.log"
        ),
        "beat": embedded.start_beat(env=env, log_path=logs / "beat-skew.log", cwd=logs),
    }
    try:
        embedded.wait_for_worker("behind", timeout=60)
        embedded.wait_for_worker("ontime", timeout=60)
        yield procs
    finally:
        embedded.stop_processes(list(procs.values()))


def test_a_worker_whose_clock_is_behind_keeps_its_healthy_steps(fleet, make_user):
    owner = make_user()
    runs = [
        run_create(owner=owner, options=RunOptions(task=f"Research tea ({n})", auto_approve=True))
        for n in range(3)
    ]
    # The skew is real: a step the late worker claimed says it started about 30 s before it
    # was first seen running.
    on_late = wait_until(
        lambda: Step.objects.filter(
            run__in=runs, status=StepStatus.RUNNING, worker__startswith="behind@"
        ).first(),
        timeout=60,
        what="a step running on the worker whose clock is behind",
    )
    assert timezone.now() - on_late.started_at > timedelta(seconds=BEHIND_S - 5)

    def all_finished() -> bool:
        return all(run.is_finished for run in Run.objects.filter(pk__in=[r.pk for r in runs]))

    wait_until(all_finished, timeout=120, what="the runs to finish")
    assert not RunEvent.objects.filter(run__in=runs, type="step.worker_lost").exists()
    steps = Step.objects.filter(run__in=runs)
    assert {step.attempts for step in steps} == {1}
    assert {run.status for run in Run.objects.filter(pk__in=[r.pk for r in runs])} == {
        RunStatus.SUCCEEDED
    }
    assert [s for s in steps if s.worker.startswith("behind@")]
    assert all(proc.poll() is None for proc in fleet.values())
