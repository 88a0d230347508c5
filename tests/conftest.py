"""Fixtures with real parts: an embedded Redis for the session, started by the first test that
is not pure, and on demand a Celery worker process and a Daphne process sharing the test
database (a file, see settings_test)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from agentsite import embedded


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run tests with real worker processes last: once started, the session's worker would
    otherwise pick up tasks that other (transactional) tests enqueue and race with them. Of
    those, the crash tests go first: they start, kill and restart workers of their own, which
    must not share the queue with the session's worker. A browser test counts as one with real
    processes whatever its marks say: Playwright's sync API leaves an event loop behind in the
    thread, and the async tests after it would fail. Tests that point this process's Celery
    producer at a Redis of their own go very last: in the full run, the runs submitted after
    them did not reach the session's workers (and every stack and browser test after failed)."""

    def order(item: pytest.Item) -> int:
        if item.get_closest_marker("broker_swap") is not None:
            return 3
        if item.get_closest_marker("stack") is None and item.get_closest_marker("browser") is None:
            return 0
        return 1 if item.get_closest_marker("crash") is not None else 2

    items.sort(key=order)


# Folders of pure tests: framework-free code (the core, the agents' loops) that never reaches
# Redis, so a run of only these (`pytest tests/core`) starts no redis-server.
# tests/test_pure_tests.py checks it.
PURE_TEST_FOLDERS = (Path(__file__).parent / "core", Path(__file__).parent / "agents")


# The session's embedded Redis writes its log here, in the var folder, as it starts.
REDIS_LOG = "redis-test.log"


@pytest.fixture(autouse=True)
def _session_redis(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test but the pure ones gets the session's Redis, started on first use: the app
    reaches Redis from many places (events, leases, the sweep) without asking for a fixture.

    After each, the steps' text in flight goes: a finish forgets its step's text once its
    transaction commits, and a test that runs in a transaction rolled back at its end never
    commits, while the next test's runs come out of the database with the same ids. So do
    the sweep's marks of what it asked for lately (leases.once_per, seen_for), named by those
    ids: left, a test's sweep could pass over the step of the same id a test before it swept.
    Leases stay: a live process may hold one for the whole session."""
    if any(request.node.path.is_relative_to(folder) for folder in PURE_TEST_FOLDERS):
        yield
        return
    request.getfixturevalue("redis_url")
    yield
    from planner_ui.stores.redis_store import redis_client, redis_key

    client = redis_client()
    left = [
        key
        for kind in ("live", "once", "seen")
        for key in client.scan_iter(match=redis_key(kind, "*"), count=1000)
    ]
    if left:
        client.delete(*left)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The session's Redis: the embedded one on settings' socket, or REDIS_URL when given.
    Started once, by the first test that needs it (_session_redis, or a fixture asking)."""
    if not settings.REDIS_IS_EMBEDDED:
        assert embedded.redis_ping(settings.REDIS_URL), (
            f"REDIS_URL {settings.REDIS_URL} does not answer"
        )
        yield settings.REDIS_URL
        return
    socket_path = Path(settings.EMBEDDED_REDIS_SOCKET)
    if embedded.redis_ping(settings.REDIS_URL):
        yield settings.REDIS_URL  # left running by an interrupted session: reuse it
        return
    proc = embedded.start_redis(socket_path, log_path=settings.VAR_DIR / REDIS_LOG)
    try:
        yield settings.REDIS_URL
    finally:
        embedded.stop_processes([proc])


def _database_url() -> str:
    """The URL of the test database as pytest-django set it up, for child processes."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    if connection.vendor == "postgresql":
        auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
        return f"postgres://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"
    raise RuntimeError(f"no child-process URL for database engine {db['ENGINE']}")


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a process a test starts: the test database and Redis, and no model
    keys or routes from the developer's shell (settings_test drops them again on its side)."""
    from agentsite.settings_test import MODEL_ENVIRONMENT

    env = {name: value for name, value in os.environ.items() if not MODEL_ENVIRONMENT.match(name)}
    env.update(
        DJANGO_SETTINGS_MODULE="agentsite.settings_test",
        AGENTSITE_VAR_DIR=str(settings.VAR_DIR),
        DATABASE_URL=_database_url(),
        REDIS_URL=settings.REDIS_URL,
        PYTHONUNBUFFERED="1",
        AGENTSITE_ALLOW_MODEL_REQUESTS="false",
        # The offline model answers at once unless the test asks for a latency (`extra`).
        AGENTSITE_OFFLINE_LATENCY_S="0",
    )
    env.update(extra)
    return env


# Each model call of the offline provider takes this long in the stack's workers, so parallel
# branches last long enough for their overlap to show in the timestamps.
OFFLINE_LATENCY_S = "0.4"


@pytest.fixture(scope="session")
def celery_worker_process(
    django_db_setup: Any, django_db_blocker: Any, redis_url: str
) -> Iterator[Any]:
    """A real `celery worker` process (prefork, 4 children) on the test database."""
    from agentsite.celery import app

    app.control.purge()  # tasks enqueued by earlier in-process tests refer to flushed runs
    log_path = settings.VAR_DIR / "worker-test.log"
    with django_db_blocker.unblock():
        # Tools may reach the test's own local servers (receivers of http_post, pages to fetch).
        # Beat looks for due scheduled templates every second: a run is then at most about a
        # second late, and the schedule test can tell a duplicate from a late run.
        env = child_env(
            AGENTSITE_OFFLINE_LATENCY_S=OFFLINE_LATENCY_S,
            AGENTSITE_TOOL_NET_ALLOW="127.0.0.1",
            AGENTSITE_SCHEDULE_TICK_S="1",
        )
    proc = embedded.start_worker(
        env=env, concurrency=4, hostname="testworker@%h", log_path=log_path, beat=True
    )
    try:
        embedded.wait_for_worker("testworker", timeout=60)
        yield proc
    finally:
        embedded.stop_processes([proc])


@pytest.fixture(scope="session")
def daphne_url(django_db_setup: Any, django_db_blocker: Any, redis_url: str) -> Iterator[str]:
    """A real Daphne process serving the app on the test database; returns its base URL."""
    port = embedded.free_port()
    with django_db_blocker.unblock():
        # As the workers: a person's edited URL is checked against it while deciding.
        env = child_env(AGENTSITE_TOOL_NET_ALLOW="127.0.0.1")
    proc = embedded.start_daphne(env=env, port=port, log_path=settings.VAR_DIR / "daphne-test.log")
    url = f"http://127.0.0.1:{port}"
    try:
        embedded.wait_for_http(url + "/accounts/login/", timeout=60)
        yield url
    finally:
        embedded.stop_processes([proc])


@pytest.fixture
def model_supervisor(django_db_blocker: Any) -> Iterator[Any]:
    """`manage.py local_models` (what `make run` runs) on the test database: it serves the
    local models a test asks for, with a fixed seed (the same plan every time)."""
    with django_db_blocker.unblock():
        env = child_env(AGENTSITE_LOCAL_MODEL_ARGS="--seed 7")
    process = embedded.start_model_supervisor(
        env=env, log_path=settings.VAR_DIR / "models-test.log"
    )
    try:
        yield process
    finally:
        embedded.stop_processes([process])


def wait_until(predicate: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    """Poll until predicate() is truthy; fail with `what` on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture
def make_user(django_user_model: Any) -> Callable[..., Any]:
    def make(username: str = "alice", password: str = "pw-for-tests-1") -> Any:
        return django_user_model.objects.create_user(username=username, password=password)

    return make


@pytest.fixture
def alice(make_user: Callable[..., Any]) -> Any:
    return make_user("alice")


@pytest.fixture
def client_alice(alice: Any) -> Any:
    """A client logged in as alice (the pages' session, not an API token)."""
    from django.test import Client

    client = Client()
    client.force_login(alice)
    return client
