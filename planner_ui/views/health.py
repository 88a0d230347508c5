"""For load balancers and orchestrators: /healthz says the process answers; /readyz says it can
serve pages, that is, its database answers. Redis and the workers are reported beside it, as
information: without a worker the pages still serve (the approvals inbox, finished runs, a
task that waits), and a load balancer that took every web server out for want of a worker
would take the whole site down with them.

Both answer whatever the Host header (agentsite.probes answers them before the host check: a
probe by address names no host), and /readyz within about READY_DEADLINE_S whatever the
database does: each check runs in a thread of its own, and one that has not answered by then
counts as not answering.

Only staff see what /readyz checked: the workers' host names and the errors' text describe the
deployment to whoever asks. Everyone else, the orchestrator included, gets the status alone,
which is all a probe reads."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, connections
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from planner_ui.selectors.workers import seconds_since_sweep, sweep_is_late, workers_alive
from planner_ui.stores.redis_store import redis_client

# Every check together answers within this; a load balancer's probe usually waits 2 to 5 s.
READY_DEADLINE_S = 1.5
# A database that accepts connections and never answers (a stopped or partitioned server) holds
# a check's thread until the connect timeout: a few threads, so such checks cannot pile up;
# while they are all stuck, a check waits its turn and counts as not answering.
_checks = ThreadPoolExecutor(max_workers=4, thread_name_prefix="readyz")


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    return ready_response(request, details_allowed=True)


def ready_response(request: HttpRequest, *, details_allowed: bool) -> JsonResponse:
    """/readyz's answer; staff see the checks when details_allowed (their session is read only
    once the database answered: reading it from one that does not would hang)."""
    checks = _run_checks(
        {"database": _database, "redis": _redis, "workers": _workers, "sweep": _sweep}
    )
    ready = checks["database"]["ok"]
    body: dict[str, Any] = {"ready": ready}
    if details_allowed and ready and request.user.is_active and request.user.is_staff:
        body["checks"] = checks
    return JsonResponse(body, status=200 if ready else 503)


def _run_checks(checks: dict[str, Callable[[], dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    started = {name: _checks.submit(_closing, check) for name, check in checks.items()}
    deadline = time.monotonic() + READY_DEADLINE_S
    results = {}
    for name, future in started.items():
        try:
            results[name] = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            results[name] = {"ok": False, "error": f"no answer within {READY_DEADLINE_S:g} s"}
    return results


def _closing(check: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run a check and give back the database connection its thread opened: a thread of the
    pool outlives the request, and a connection it kept would stay out of PostgreSQL's
    connection pool for good (four of them took the whole pool, and the next request that read
    a session waited out the pool's timeout)."""
    try:
        return check()
    finally:
        connections.close_all()


def _database() -> dict[str, Any]:
    try:
        if connection.vendor == "postgresql":
            _postgresql_answers()
        else:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        return {"ok": True}
    except DatabaseError as exc:
        return {"ok": False, "error": f"the database does not answer: {exc}"}


def _postgresql_answers() -> None:
    """SELECT 1 on a connection of its own: a connection of the pool may be the one stuck, and
    a new one gives up after the connect timeout instead of the operating system's minutes."""
    import psycopg

    params = connection.get_connection_params()
    params["connect_timeout"] = max(1, round(READY_DEADLINE_S))
    try:
        with psycopg.connect(**params, autocommit=True) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        raise DatabaseError(str(exc)) from exc


def _redis() -> dict[str, Any]:
    try:
        redis_client().ping()
        return {"ok": True}
    except Exception as exc:  # redis-py raises several kinds; all mean the same here
        return {"ok": False, "error": f"Redis (REDIS_URL) does not answer: {exc}"}


def _workers() -> dict[str, Any]:
    alive = workers_alive()
    if alive is None:
        return {"ok": False, "error": "cannot ask Redis which workers are alive"}
    if not alive:
        return {
            "ok": False,
            "error": f"no worker has said it is alive in the last "
            f"{settings.AGENTSITE_WORKER_ALIVE_S:g} s: start one (the pages still serve)",
        }
    return {"ok": True, "alive": alive}


def _sweep() -> dict[str, Any]:
    """When the fleet last swept (information: pages serve without it)."""
    since = seconds_since_sweep()
    if since is None:
        return {"ok": True, "seconds_since": None}
    if sweep_is_late(since):
        return {
            "ok": False,
            "seconds_since": round(since, 1),
            "error": f"no sweep for {since:.0f} s: a dead worker's steps are not taken over",
        }
    return {"ok": True, "seconds_since": round(since, 1)}
