"""Two installations of agentsite on ONE Redis database, told apart only by AGENTSITE_PREFIX:
each with its own SQLite database and var/ folder and a real worker (with beat). Each finishes
its own runs, no task reaches the other's worker (counted in the workers' logs), and
`celery inspect` from one installation sees only its own worker.

One of them keeps the default prefix, as an installation from before the prefix named Celery's
queue would: the other, added beside it, must not disturb it.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis

from agentsite import embedded
from tests.conftest import child_env, wait_until

pytestmark = [
    pytest.mark.stack,
    pytest.mark.crash,  # runs before the session's own worker, on a Redis of its own
]

REPO = Path(__file__).resolve().parents[2]
RUNS_EACH = 3
# Installation B's runs are numbered from here, so a run id in a log says whose it is.
B_FIRST_RUN_ID = 1001
# One line per task (agentsite.worker_log), e.g. "plan_run run 3: success in 0.52 s".
TASK_LINE = re.compile(r"^(plan_run|execute_step|replan_task) run (\d+)\b.*: \w+ in ", re.M)


class Installation:
    def __init__(self, name: str, prefix: str, root: Path, redis_url: str) -> None:
        self.name, self.prefix = name, prefix
        self.folder = root / name
        self.folder.mkdir()
        self.env = child_env(
            DJANGO_SETTINGS_MODULE="agentsite.settings",
            DJANGO_SECRET_KEY=f"secret-of-{name}",
            AGENTSITE_VAR_DIR=str(self.folder),
            DATABASE_URL=f"sqlite:///{self.folder / 'db.sqlite3'}",
            REDIS_URL=redis_url,
            AGENTSITE_PREFIX=prefix,
            AGENTSITE_OFFLINE_LATENCY_S="0.2",
            AGENTSITE_SWEEP_S="2",
            AGENTSITE_REQUEUE_AFTER_S="5",
        )
        self.worker: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return self.folder / "worker.log"

    def manage(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO, env=self.env, capture_output=True,
            text=True, timeout=timeout,
        )  # fmt: skip

    def celery(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "celery", "-A", "agentsite", *args], cwd=REPO, env=self.env,
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    def start(self, first_run_id: int = 1) -> None:
        migrated = self.manage("migrate", "--noinput")
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr
        if first_run_id > 1:
            with sqlite3.connect(self.folder / "db.sqlite3") as db:
                db.execute("DELETE FROM sqlite_sequence WHERE name = 'planner_ui_run'")
                db.execute(
                    "INSERT INTO sqlite_sequence (name, seq) VALUES ('planner_ui_run', ?)",
                    (first_run_id - 1,),
                )
        # No -Q: the worker takes its queue from the settings, as the Procfile starts it.
        self.worker = embedded.start_worker(
            env=self.env, concurrency=2, hostname=f"{self.name}@%h", log_path=self.log,
            beat=True, cwd=self.folder,
        )  # fmt: skip

    def submit(self, task: str) -> dict:
        done = self.manage("runtask", task, "--json", "--timeout", "120", timeout=180)
        assert done.returncode == 0, f"{self.name}: {done.stdout}\n{done.stderr}"
        return json.loads(done.stdout)

    def task_lines(self) -> list[tuple[str, int]]:
        text = self.log.read_text(errors="replace")
        return [(kind, int(run)) for kind, run in TASK_LINE.findall(text)]


@pytest.fixture(scope="module")
def installations(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("installs")
    socket_path = root / "redis" / "r.sock"
    redis = embedded.start_redis(socket_path, log_path=root / "redis.log")
    redis_url = f"unix://{socket_path}"  # one Redis, one database (0) for both
    a = Installation("install-a", "agentsite", root, redis_url)
    b = Installation("install-b", "agentsite-b", root, redis_url)
    try:
        a.start()
        b.start(first_run_id=B_FIRST_RUN_ID)
        for install in (a, b):
            wait_until(
                lambda install=install: "ready." in install.log.read_text(errors="replace"),
                timeout=60,
                what=f"{install.name}'s worker ready",
            )
        yield a, b
    finally:
        # Last started, first stopped: the workers before their Redis.
        embedded.stop_processes([redis] + [p for p in (a.worker, b.worker) if p])


def test_each_installation_runs_its_own_tasks_and_no_other(installations):
    a, b = installations
    jobs = [(install, f"Research tea number {n}") for n in range(RUNS_EACH) for install in (a, b)]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        reports = list(pool.map(lambda job: (job[0], job[0].submit(job[1])), jobs))

    own_runs = {a.name: set(), b.name: set()}
    for install, report in reports:
        assert report["status"] == "succeeded", (install.name, report)
        own_runs[install.name].add(report["run_id"])
    assert all(run < B_FIRST_RUN_ID for run in own_runs[a.name])
    assert all(run >= B_FIRST_RUN_ID for run in own_runs[b.name])

    for install in (a, b):
        lines = install.task_lines()
        planned = [run for kind, run in lines if kind == "plan_run"]
        # Every task this worker received was for one of its own runs, each planned once.
        assert sorted(planned) == sorted(own_runs[install.name]), (install.name, lines)
        assert {run for _, run in lines} == own_runs[install.name], (install.name, lines)
        assert sum(kind == "execute_step" for kind, _ in lines) >= RUNS_EACH
    # B's broker keys carry its prefix, its queue's binding included; A's keep Celery's names.
    keys = {key.decode() for key in redis.Redis.from_url(a.env["REDIS_URL"]).keys("*")}
    assert {"_kombu.binding.agentsite", "agentsite-b:_kombu.binding.agentsite-b"} <= keys, keys
    assert not {key for key in keys if key.startswith("_kombu.binding.agentsite-b")}, keys


def test_celery_control_of_one_installation_reaches_only_its_own_worker(installations):
    a, b = installations
    for install in (a, b):
        pinged = install.celery("inspect", "ping", "--json", "--timeout", "2")
        assert pinged.returncode == 0, pinged.stdout + pinged.stderr
        nodes = set(json.loads(pinged.stdout.strip().splitlines()[-1]))
        assert {node.split("@")[0] for node in nodes} == {install.name}, pinged.stdout

        queues = install.celery("inspect", "active_queues", "--json", "--timeout", "2")
        assert queues.returncode == 0, queues.stdout + queues.stderr
        consumed = json.loads(queues.stdout.strip().splitlines()[-1])
        assert [q["name"] for q in next(iter(consumed.values()))] == [install.prefix]
