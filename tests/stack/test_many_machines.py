"""agentsite on "many machines": PostgreSQL, one Redis server, two workers and two Daphnes, each
in a working directory of its own with no disk shared between them, and beat on its own, all
started with the README's commands and settings.

Runs hand files from step to step; a run is watched from the other machine's Daphne; a worker
SIGKILLed in a step that reads the file it wrote loses nothing: the other machine takes the step
over within a minute and reads the file as the dead one wrote it; a task message lost from the
queue is handed out again by the sweep.
"""

from __future__ import annotations

import re
import signal
import time
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from agentsite import embedded
from bench.websocket import Watchers
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Run, RunFile
from tests.conftest import _database_url, child_env, wait_until

pytestmark = [
    pytest.mark.stack,
    pytest.mark.database,
    pytest.mark.crash,  # runs before the session's own worker, on a Redis of its own
    pytest.mark.django_db(transaction=True),
]

FILE_TASK = "Save a list of three teas to teas.md. Then read teas.md and summarize it."


class Machines:
    """The processes of the installation, each machine in a folder of its own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.procs: dict[str, object] = {}
        self.redis = embedded.start_redis(root / "redis" / "r.sock", log_path=root / "redis.log")
        self.redis_url = f"unix://{root / 'redis' / 'r.sock'}"
        self.ports = {"web-a": embedded.free_port(), "web-b": embedded.free_port()}

    def env(self, machine: str) -> dict[str, str]:
        folder = self.root / machine
        folder.mkdir(exist_ok=True)
        return child_env(
            DATABASE_URL=_database_url(),
            REDIS_URL=self.redis_url,
            # Shared by every machine, as production requires; the test's own, so its logins
            # count on both Daphnes.
            DJANGO_SECRET_KEY=settings.SECRET_KEY,
            DJANGO_SETTINGS_MODULE="agentsite.settings",
            AGENTSITE_VAR_DIR=str(folder),
            AGENTSITE_WORKSPACES_DIR=str(folder / "workspaces"),
            AGENTSITE_OFFLINE_LATENCY_S="1.0",
            AGENTSITE_STEP_LEASE_S="3",
            AGENTSITE_SWEEP_S="1",
            AGENTSITE_REQUEUE_AFTER_S="3",
            # The broker would hand a dead worker's task back only after an hour: what
            # recovers it here is the sweep.
            CELERY_VISIBILITY_TIMEOUT="3600",
        )

    def start_worker(self, machine: str) -> None:
        folder = self.root / machine
        self.procs[machine] = embedded.start_worker(
            env=self.env(machine),
            concurrency=2,
            hostname=f"{machine}@%h",
            log_path=folder / "worker.log",
            cwd=folder,
        )

    def start(self) -> None:
        for machine in ("machine-a", "machine-b"):
            self.start_worker(machine)
        self.procs["beat"] = embedded.start_beat(
            env=self.env("beat"), log_path=self.root / "beat" / "beat.log", cwd=self.root / "beat"
        )
        for web, port in self.ports.items():
            self.procs[web] = embedded.start_daphne(
                env=self.env(web), port=port, log_path=self.root / web / "daphne.log",
                cwd=self.root / web,
            )  # fmt: skip
        for port in self.ports.values():
            embedded.wait_for_http(f"http://127.0.0.1:{port}/healthz", timeout=60)
        wait_until(lambda: len(self.ready()["checks"]["workers"].get("alive", [])) == 2,
                   what="both workers alive")  # fmt: skip

    def ready(self) -> dict:
        """/readyz as staff see it: anyone else gets the status alone."""
        import json

        from django.contrib.auth import get_user_model

        if not hasattr(self, "staff_cookie"):
            staff = get_user_model().objects.create_user("readyz-staff", is_staff=True)
            client = Client()
            client.force_login(staff)
            name = settings.SESSION_COOKIE_NAME
            self.staff_cookie = f"{name}={client.cookies[name].value}"
        request = urllib.request.Request(
            self.url("web-a", "/readyz"), headers={"Cookie": self.staff_cookie}
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as refused:
            return json.loads(refused.read())

    def url(self, web: str, path: str) -> str:
        return f"http://127.0.0.1:{self.ports[web]}{path}"

    def kill(self, machine: str) -> None:
        embedded._signal(self.procs[machine], signal.SIGKILL, whole_group=True)
        self.procs[machine].wait(timeout=10)

    def stop(self) -> None:
        embedded.stop_processes([p for p in self.procs.values() if p.poll() is None])
        embedded.stop_processes([self.redis])


@pytest.fixture
def machines(tmp_path_factory):
    if connection.vendor != "postgresql":
        pytest.skip(
            "runs on PostgreSQL, in make test's PostgreSQL pass (TEST_POSTGRES_URL): several "
            "machines share one database server"
        )
    # Short: the Redis socket's path must fit in 107 bytes.
    root = Path(tmp_path_factory.mktemp("mm"))
    found = Machines(root)
    try:
        found.start()
        yield found
    finally:
        found.stop()


class Browser:
    """A logged-in person on one machine's Daphne: the form, as the page posts it."""

    def __init__(self, machines: Machines, web: str, user) -> None:
        client = Client()
        client.force_login(user)
        name = settings.SESSION_COOKIE_NAME
        self.cookie = f"{name}={client.cookies[name].value}"
        self.machines, self.web = machines, web
        self.jar = CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def submit(self, task: str) -> int:
        home = self._open("/", None).decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', home).group(1)
        data = urllib.parse.urlencode(
            {"csrfmiddlewaretoken": token, "task": task, "auto_approve": "on"}
        ).encode()
        self._open("/runs/new/", data)
        return Run.objects.filter(task=task).order_by("-pk").values_list("pk", flat=True)[0]

    def _open(self, path: str, data: bytes | None) -> bytes:
        request = urllib.request.Request(self.machines.url(self.web, path), data=data)
        cookies = "".join(f"; {c.name}={c.value}" for c in self.jar)
        request.add_header("Cookie", self.cookie + cookies)
        request.add_header("Referer", self.machines.url(self.web, "/"))
        with self.opener.open(request, timeout=30) as answer:
            return answer.read()


def finished(run_id: int) -> Run | None:
    run = Run.objects.get(pk=run_id)
    return run if run.is_finished else None


def test_many_machines_share_files_take_over_a_dead_worker_and_recover_lost_messages(
    machines, make_user
):
    alice = make_user("alice")
    on_a, on_b = Browser(machines, "web-a", alice), Browser(machines, "web-b", alice)

    # Runs submitted on machine A, one watched from machine B's Daphne.
    watchers = Watchers("127.0.0.1", [machines.ports["web-b"]], on_b.cookie)
    runs = [on_a.submit(f"{FILE_TASK} ({n})") for n in range(3)]
    watchers.watch(runs[0], after=0, count=1)
    done = [wait_until(lambda r=r: finished(r), timeout=120, what=f"run {r}") for r in runs]
    for run in done:
        assert run.status == RunStatus.SUCCEEDED, run.error
        assert run.warnings == []
        read = run.steps.get(step_id="read-teas-md")
        assert read.status == StepStatus.SUCCEEDED
        assert RunFile.objects.filter(run=run, path="teas.md").exists()
    assert watchers.wait_for_seq(done[0].last_event_seq, timeout=10)
    watched = b"".join(raw for _, raw in watchers.stop())
    assert b'"type": "step.succeeded"' in watched and b"read-teas-md" in watched
    watchers.shutdown()

    # Machine B writes a file and dies while the next step reads it; machine A takes that
    # step over and reads what B wrote. (A's worker is away meanwhile, so that all of it
    # starts on B: a worker runs the step a finish made ready itself, on the same machine.)
    embedded.stop_processes([machines.procs["machine-a"]])
    victim = on_a.submit(f"{FILE_TASK} (B)")

    def reading_on_b():
        run = Run.objects.get(pk=victim)
        return run.steps.filter(
            step_id="read-teas-md", status=StepStatus.RUNNING, worker__startswith="machine-b@"
        ).first()

    step = wait_until(reading_on_b, timeout=60, what="the reading step running on machine B")
    machines.kill("machine-b")
    killed_at = time.monotonic()
    machines.start_worker("machine-a")
    run = wait_until(lambda: finished(victim), timeout=60, what="the run to finish without B")
    assert time.monotonic() - killed_at < 60
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.steps.get(step_id="save-list-three-teas").worker.startswith("machine-b@")
    step.refresh_from_db()
    assert step.status == StepStatus.SUCCEEDED and step.attempts == 2
    assert step.worker.startswith("machine-a@")
    # A's attempt read the file itself (B died in the step's first model call, before it
    # read), and what it read is what B wrote.
    lost = run.events.get(type="step.worker_lost", step_id=step.step_id)
    read = run.events.get(step_id=step.step_id, type="step.tool_result", seq__gt=lost.seq)
    content = bytes(RunFile.objects.get(run=run, path="teas.md").content).decode()
    assert read.payload["content"] == content and not read.payload["is_error"]
    assert not run.events.filter(type="step.failed").exists()

    machines_used = {
        s.worker.split("@")[0] for r in [*done, run] for s in r.steps.all() if s.worker
    }
    assert machines_used == {"machine-a", "machine-b"}

    # With no worker at all, a task message is lost from the queue (a Redis restart without
    # persistence); once a worker is back, the sweep hands the planning out again.
    embedded.stop_processes([machines.procs["machine-a"]])
    import redis

    lost = on_b.submit("Research tea")
    queue = redis.Redis.from_url(machines.redis_url)
    planning = [m for m in queue.lrange("agentsite", 0, -1) if b"planner_ui.tasks.plan_run" in m]
    assert len(planning) == 1
    queue.lrem("agentsite", 0, planning[0])
    machines.start_worker("machine-a")
    run = wait_until(lambda: finished(lost), timeout=60, what="the lost run to be recovered")
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert "sweep: plans again 1" in (machines.root / "machine-a" / "worker.log").read_text()
