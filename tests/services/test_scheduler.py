"""When the task queue is unreachable, the run says so instead of waiting forever."""

from __future__ import annotations

import pytest
from kombu import pools

from agentsite.celery import app
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.models import Run
from planner_ui.services.runs import run_create

pytestmark = pytest.mark.django_db(transaction=True)


def _reset_pools() -> None:
    # Celery takes its pool from kombu's global registry (keyed by broker URL) and builds a
    # producer pool on it: drop all three, so neither test sees the other's connections.
    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def dead_broker(tmp_path):
    """Point this process's Celery producer at a socket nothing listens on."""
    original = app.conf.broker_url
    _reset_pools()
    app.conf.broker_url = f"redis+socket://{tmp_path / 'nothing.sock'}"
    yield
    _reset_pools()
    app.conf.broker_url = original


def test_an_unreachable_queue_fails_the_run_with_a_reason(make_user, dead_broker):
    run = run_create(owner=make_user(), options=RunOptions(task="Research tea"))
    run = Run.objects.get(pk=run.pk)
    assert run.status == RunStatus.FAILED
    assert run.error.startswith("Could not hand the work to a worker: the task queue at REDIS_URL")
    assert "Start Redis and the workers (`make run` does both)" in run.error
    assert run.events.filter(type="run.status", payload__status="failed").exists()
