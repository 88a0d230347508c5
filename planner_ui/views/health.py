"""For load balancers and orchestrators: /healthz says the process answers; /readyz says it can
do its work (the database, Redis, and at least one worker that said it is alive).

Only staff see what /readyz checked: the workers' host names and the errors' text describe the
deployment to whoever asks. Everyone else, the orchestrator included, gets the status alone,
which is all a probe reads."""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from planner_ui.selectors.workers import workers_alive
from planner_ui.services.redis_store import redis_client


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    checks = {"database": _database(), "redis": _redis(), "workers": _workers()}
    ready = all(check["ok"] for check in checks.values())
    body: dict = {"ready": ready}
    if request.user.is_active and request.user.is_staff:
        body["checks"] = checks
    return JsonResponse(body, status=200 if ready else 503)


def _database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"ok": True}
    except DatabaseError as exc:
        return {"ok": False, "error": f"the database does not answer: {exc}"}


def _redis() -> dict:
    try:
        redis_client().ping()
        return {"ok": True}
    except Exception as exc:  # redis-py raises several kinds; all mean the same here
        return {"ok": False, "error": f"Redis (REDIS_URL) does not answer: {exc}"}


def _workers() -> dict:
    alive = workers_alive()
    if alive is None:
        return {"ok": False, "error": "cannot ask Redis which workers are alive"}
    if not alive:
        return {"ok": False, "error": "no worker has said it is alive lately: start one"}
    return {"ok": True, "alive": alive}
