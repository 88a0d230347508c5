"""Tasks are sent by their registered name, and an experiment's advance that the queue refuses
is sent again once it answers, as a run's work is (test_scheduler.py)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from agentsite import embedded
from agentsite.celery import app
from planner_ui.core.evaluation import arm_parse, shipped_suites, suite_load
from planner_ui.services.broadcast import tasks_send
from planner_ui.services.evaluations import experiment_create, experiments_advance_running
from planner_ui.services.handover import sends_pending
from planner_ui.services.sender import TaskName, TaskSend
from tests.conftest import wait_until
from tests.services.conftest import queued_on

pytestmark = pytest.mark.django_db


def test_every_name_the_services_send_is_a_registered_task() -> None:
    import planner_ui.tasks  # noqa: F401 - registers them, as a worker's autodiscovery does

    assert {name.value for name in TaskName} <= set(app.tasks)


def _experiment(owner):
    suite = suite_load(shipped_suites()["parallel"])
    return experiment_create(owner, suite, [arm_parse("agent")], repeat=1, concurrency=1)


def _advances_once_the_queue_answers(socket: Path) -> list[int]:
    """Start the queue's Redis; the experiments whose advance then reaches it."""
    name = TaskName.EXPERIMENT_ADVANCE.value.encode()
    redis_server = embedded.start_redis(socket)
    try:
        wait_until(lambda: any(name in m for m in queued_on(socket)), timeout=10, what="it")
        wait_until(lambda: sends_pending() == 0, timeout=10, what="the resender to finish")
        messages = [json.loads(m) for m in queued_on(socket) if name in m]
        return [ast.literal_eval(m["headers"]["argsrepr"])[0] for m in messages]
    finally:
        embedded.stop_processes([redis_server])


def test_an_experiment_s_first_advance_refused_by_the_queue_is_sent_once_it_answers(
    alice, queue_socket, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        experiment = _experiment(alice)  # refused at commit; not raised to the person

    assert _advances_once_the_queue_answers(queue_socket) == [experiment.pk]


def test_the_sweep_s_advance_of_a_running_experiment_refused_is_sent_once_it_answers(
    alice, queue_socket
):
    experiment = _experiment(alice)  # its own first advance waits for a commit that never comes

    assert experiments_advance_running() == 1  # refused; not raised to the sweep

    assert _advances_once_the_queue_answers(queue_socket) == [experiment.pk]


def test_tasks_sent_one_batch_after_another_share_one_redis_client(queue_socket):
    """agentsite.broker_client: kombu built a Redis client (and its table of reply callbacks)
    for every batch of tasks sent; the channel keeps one until its pool is replaced."""
    redis_server = embedded.start_redis(queue_socket)
    try:
        for step_id in ("s1", "s2"):
            tasks_send([(TaskSend(TaskName.EXECUTE_STEP, (1, step_id)), _refusal_unexpected)])
        messages = [json.loads(m) for m in queued_on(queue_socket)]
        assert sorted(m["headers"]["argsrepr"] for m in messages) == ["(1, 's1')", "(1, 's2')"]

        with app.producer_or_acquire() as producer:
            channel = producer.channel
            client = channel._create_client()
            assert channel._create_client() is client
            channel._pool = None  # as kombu drops it after a lost connection
            renewed = channel._create_client()
            assert renewed is not client and renewed.connection_pool is channel.pool
            assert renewed.ping()
    finally:
        embedded.stop_processes([redis_server])


def _refusal_unexpected(exc: Exception) -> None:
    raise AssertionError(f"the queue refused a task: {exc}")
