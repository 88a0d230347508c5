"""Redis stops for five seconds (as `docker compose restart redis` stops it) and comes back on
its append-only file, as `compose.yaml` runs it, while workers run steps and while runs are
submitted: every run finishes and every worker is still there, counted alive. And the first
WebSocket opened on a Daphne after a restart is answered.

Before, the run whose hand-over the queue refused was failed for good ("Could not hand the work
to a worker"), each worker that held a task died as it reconnected ("Unrecoverable error:
AttributeError ... 'hostname'", see agentsite.broker_reconnect), and that first handshake got
a 500.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings
from kombu import pools

from agentsite import embedded
from agentsite.celery import app
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Run, RunEvent, Step
from planner_ui.services.runs import run_create
from tests.conftest import child_env, wait_until

pytestmark = [
    pytest.mark.broker_swap,
    pytest.mark.stack,
    pytest.mark.crash,  # on a Redis of its own, before the session's worker starts
    pytest.mark.django_db(transaction=True),
]

TASK = "Research tea and coffee, then write a short summary"
WORKERS = ("blip1", "blip2")


class Blip:
    """A Redis with an append-only file, and two workers on it."""

    def __init__(self, root: Path) -> None:
        self.socket = root / "r.sock"
        self.url = f"unix://{self.socket}"
        self.log = root / "redis.log"
        self.redis = self.start_redis()
        self.workers = {
            name: embedded.start_worker(
                env=child_env(
                    REDIS_URL=self.url,
                    AGENTSITE_OFFLINE_LATENCY_S="1.0",
                    AGENTSITE_STEP_LEASE_S="10",
                ),
                # Room for more than it holds when Redis stops: a worker waiting for more
                # work as it holds some is the one that died.
                concurrency=3,
                hostname=f"{name}@%h",
                log_path=root / f"{name}.log",
            )
            for name in WORKERS
        }
        self.logs = {name: root / f"{name}.log" for name in WORKERS}

    def start_redis(self):
        return embedded.start_redis(self.socket, log_path=self.log, append_fsync="everysec")

    def stop_redis(self) -> None:
        """As an operator's restart stops it: it closes its clients and writes its file."""
        self.redis.send_signal(signal.SIGTERM)
        self.redis.wait(timeout=10)

    def alive_keys(self) -> set[str]:
        client = redis.Redis(unix_socket_path=str(self.socket))
        try:
            return {key.decode() for key in client.keys(f"{settings.AGENTSITE_PREFIX}:worker:*")}
        finally:
            client.close()

    def assert_workers_alive(self) -> None:
        for name, worker in self.workers.items():
            if worker.poll() is not None:
                log = self.logs[name].read_text()
                died = next((line for line in log.splitlines() if "Unrecoverable" in line), "")
                pytest.fail(f"worker {name} exited ({worker.returncode}): {died}")

    def stop(self) -> None:
        # Nothing of theirs is worth a warm shutdown's wait.
        for worker in self.workers.values():
            embedded._signal(worker, signal.SIGKILL, whole_group=True)
            worker.wait(timeout=10)
        embedded.stop_processes([self.redis])


def _use_broker(url: str) -> None:
    # This process's producer on another broker (the hand-over of runs it submits): Celery
    # keeps its pools keyed by URL, so drop them along with the URL.
    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None
    app.conf.broker_url = url


@pytest.fixture
def blip(tmp_path_factory) -> Iterator[Blip]:
    root = Path(tmp_path_factory.mktemp("blip"))  # short: the socket's path has a limit
    original = app.conf.broker_url
    found = Blip(root)
    _use_broker(f"redis+socket://{found.socket}")
    try:
        for name in WORKERS:
            embedded.wait_for_worker(name, timeout=60)
        yield found
    finally:
        found.stop()
        _use_broker(original)


def submit(user, n: int) -> int:
    return run_create(owner=user, options=RunOptions(task=f"{TASK} ({n})", auto_approve=True)).pk


def test_a_five_second_redis_outage_loses_no_run_and_no_worker(blip, make_user):
    alice = make_user("alice")
    before = [submit(alice, n) for n in range(2)]
    wait_until(
        lambda: Step.objects.filter(run_id__in=before, status=StepStatus.RUNNING).count() >= 2,
        timeout=60,
        what="steps running on the workers",
    )

    blip.stop_redis()
    down_at = time.monotonic()
    during = [submit(alice, n) for n in range(2, 4)]
    # The queue refused their planning: the runs wait, and say so.
    for run_id in during:
        assert Run.objects.get(pk=run_id).status == RunStatus.PLANNING
        delayed = RunEvent.objects.get(run_id=run_id, type="handover.delayed")
        assert delayed.payload["task"] == "plan_run"
        assert delayed.payload["retry_s"] == settings.AGENTSITE_SEND_RETRY_S
    time.sleep(max(0.0, 5 - (time.monotonic() - down_at)))
    blip.redis = blip.start_redis()

    def all_finished() -> bool:
        blip.assert_workers_alive()  # a dead one would hold its tasks for the visibility timeout
        return not Run.objects.filter(pk__in=before + during, finished_at__isnull=True).exists()

    wait_until(all_finished, timeout=60, what="every run to finish")
    for run in Run.objects.filter(pk__in=before + during):
        assert run.status == RunStatus.SUCCEEDED, (run.pk, run.error)
    # The workers kept the steps they held: none was taken over or run twice.
    assert set(Step.objects.filter(run_id__in=before).values_list("attempts", flat=True)) == {1}
    assert not RunEvent.objects.filter(run_id__in=before, type="step.worker_lost").exists()

    blip.assert_workers_alive()
    for name in WORKERS:
        embedded.wait_for_worker(name, timeout=10)
    alive = blip.alive_keys()
    assert {key.split(":")[-1].split("@")[0] for key in alive} == set(WORKERS)
    # Both held tasks when Redis went away, and carried on: the case that used to kill them.
    for name in WORKERS:
        text = blip.logs[name].read_text()
        assert "Unrecoverable error" not in text
    assert any("Restoring" in blip.logs[name].read_text() for name in WORKERS)


def handshake(port: int, path: str, cookie: str) -> bytes:
    """The status line Daphne answers a WebSocket handshake with."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        key = base64.b64encode(os.urandom(16)).decode()
        conn.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                f"Sec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:{port}\r\n"
                f"Cookie: {cookie}\r\n\r\n"
            ).encode()
        )
        return conn.recv(4096).split(b"\r\n", 1)[0]


def test_the_first_websocket_after_a_redis_restart_is_answered(tmp_path_factory, make_user):
    from django.test import Client

    root = Path(tmp_path_factory.mktemp("ws"))
    sock = root / "r.sock"
    redis_server = embedded.start_redis(sock, log_path=root / "redis.log")
    port = embedded.free_port()
    daphne = embedded.start_daphne(
        env=child_env(REDIS_URL=f"unix://{sock}"), port=port, log_path=root / "daphne.log"
    )
    try:
        embedded.wait_for_http(f"http://127.0.0.1:{port}/healthz", timeout=60)
        alice = make_user("alice")
        run = Run.objects.create(owner=alice, task="Research tea", status=RunStatus.SUCCEEDED)
        client = Client()
        client.force_login(alice)
        name = settings.SESSION_COOKIE_NAME
        cookie = f"{name}={client.cookies[name].value}"
        path = f"/ws/runs/{run.pk}/"
        # A page came and went: Daphne keeps its pub/sub connection, idle.
        assert handshake(port, path, cookie) == b"HTTP/1.1 101 Switching Protocols"
        time.sleep(0.5)

        embedded.stop_processes([redis_server])
        redis_server = embedded.start_redis(sock, log_path=root / "redis.log")
        assert handshake(port, path, cookie) == b"HTTP/1.1 101 Switching Protocols"
    finally:
        embedded.stop_processes([daphne, redis_server])


def test_a_worker_is_counted_alive_as_soon_as_it_is_back_on_an_empty_redis(tmp_path_factory):
    """A Redis without persistence comes back empty: the worker says it is alive as it
    reconnects, not at its next beat (every AGENTSITE_WORKER_ALIVE_S / 3: here 20 s)."""
    root = Path(tmp_path_factory.mktemp("alive"))
    sock = root / "r.sock"
    redis_server = embedded.start_redis(sock, log_path=root / "redis.log")
    original = app.conf.broker_url
    worker = embedded.start_worker(
        env=child_env(REDIS_URL=f"unix://{sock}", AGENTSITE_WORKER_ALIVE_S="60"),
        concurrency=1,
        hostname="alive@%h",
        log_path=root / "worker.log",
    )
    _use_broker(f"redis+socket://{sock}")
    key = f"{settings.AGENTSITE_PREFIX}:worker:alive@"
    try:
        embedded.wait_for_worker("alive", timeout=60)
        client = redis.Redis(unix_socket_path=str(sock))
        assert client.keys(key + "*")
        client.close()

        embedded.stop_processes([redis_server])
        redis_server = embedded.start_redis(sock, log_path=root / "redis.log")
        embedded.wait_for_worker("alive", timeout=30)  # it answers: it has reconnected
        client = redis.Redis(unix_socket_path=str(sock))
        assert wait_until(lambda: client.keys(key + "*"), timeout=2, what="its sign of life")
        client.close()
        assert worker.poll() is None
    finally:
        embedded._signal(worker, signal.SIGKILL, whole_group=True)
        worker.wait(timeout=10)
        embedded.stop_processes([redis_server])
        _use_broker(original)
