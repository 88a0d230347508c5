"""On PostgreSQL, a web server and a worker hold no more connections than their pools allow,
under load as at rest: AGENTSITE_DB_POOL_MAX per process (a worker's are its main process and
each process of its pool). With persistent connections, one Daphne held 83 after a burst of
page views, and under load 97 of PostgreSQL's 100."""

from __future__ import annotations

import http.cookiejar
import os
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter

import pytest
from django.db import connection

from agentsite import embedded
from planner_ui.models import Run
from tests.conftest import child_env, wait_until

pytestmark = [
    pytest.mark.stack,
    pytest.mark.database,
    pytest.mark.crash,  # starts a worker of its own: before the session's worker exists
    pytest.mark.django_db(transaction=True),
]

POOL_MAX = 2
CONCURRENCY = 2
PAGE_THREADS = 12


def held_by_process() -> Counter:
    """Connections to the test database, by the process id in their application name."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT application_name FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        names = [name for (name,) in cursor.fetchall()]
    return Counter(int(name.rsplit(" ", 1)[1]) for name in names if name.startswith("agentsite "))


def test_a_web_server_and_a_worker_hold_no_more_than_their_pools(make_user, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL budget: make test-postgres runs it")
    make_user("budget", "pw-budget-1")
    env = child_env(
        AGENTSITE_DB_POOL_MAX=str(POOL_MAX),
        AGENTSITE_OFFLINE_LATENCY_S="0.3",
        AGENTSITE_SWEEP_S="2",
    )
    port = embedded.free_port()
    web = embedded.start_daphne(env=env, port=port, log_path=tmp_path / "daphne.log")
    worker = embedded.start_worker(
        env=env, concurrency=CONCURRENCY, hostname="budget@%h", log_path=tmp_path / "w.log",
        beat=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    peak: Counter = Counter()
    stop = threading.Event()
    failures: list[str] = []
    try:
        embedded.wait_for_http(base + "/healthz", timeout=60)
        embedded.wait_for_worker("budget", timeout=60)
        browser, post = _logged_in(base, "budget", "pw-budget-1")

        def sample() -> None:
            try:
                while not stop.is_set():
                    for pid, count in held_by_process().items():
                        peak[pid] = max(peak[pid], count)
                    time.sleep(0.1)
            finally:
                connection.close()  # this thread's own

        def view_pages() -> None:
            while not stop.is_set():
                for path in ("/", "/runs/"):
                    try:
                        browser.open(base + path, timeout=60).read()
                    except Exception as error:  # a pool that ran dry answers 500
                        failures.append(f"{path}: {error}")

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        runs = [
            post("/runs/new/", {"task": f"Research tea number {n}", "auto_approve": "on"})
            for n in range(4)
        ]
        assert all("/runs/" in answer.geturl() for answer in runs)
        viewers = [threading.Thread(target=view_pages, daemon=True) for _ in range(PAGE_THREADS)]
        for viewer in viewers:
            viewer.start()
        wait_until(
            lambda: Run.objects.filter(status="succeeded").count() == 4,
            timeout=120,
            what="the four runs succeeded",
        )
        stop.set()
        for thread in (sampler, *viewers):
            thread.join(timeout=60)
        at_rest = held_by_process()
    finally:
        stop.set()
        embedded.stop_processes([web, worker])

    assert not failures, failures[:5]
    # The web server: one process. The worker: its main process and CONCURRENCY pool processes,
    # which name themselves by the main process's id.
    assert 0 < peak[web.pid] <= POOL_MAX, peak
    assert 0 < peak[worker.pid] <= (CONCURRENCY + 1) * POOL_MAX, peak
    assert at_rest[web.pid] <= POOL_MAX and at_rest[worker.pid] <= (CONCURRENCY + 1) * POOL_MAX
    assert set(peak) <= {web.pid, worker.pid, os.getpid()}, peak  # no other process of theirs


def _logged_in(base: str, username: str, password: str):
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def post(path: str, fields: dict[str, str]):
        token = next(c.value for c in jar if c.name == "csrftoken")
        data = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": token}).encode()
        request = urllib.request.Request(base + path, data, headers={"Referer": base + path})
        return browser.open(request, timeout=60)

    browser.open(base + "/accounts/login/", timeout=30).read()
    post("/accounts/login/", {"username": username, "password": password})
    return browser, post


def test_a_forked_process_opens_a_pool_of_its_own_and_leaves_the_parents_alone():
    if connection.vendor != "postgresql":
        pytest.skip("the PostgreSQL pool: make test-postgres runs it")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (parents,) = cursor.fetchone()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit code
        code = 1
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                code = 0 if cursor.fetchone()[0] != parents else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # 2: it used the parent's connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] == parents  # still the parent's own, and alive
