"""Who calls the API: a personal token as `Authorization: Bearer <token>`, and how often.

The limit is counted in Redis, so it holds across every web server of an installation; if
Redis does not answer, requests are let through (the API stays usable) and it is logged."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.security import HttpBearer
from ninja.throttling import BaseThrottle

from planner_ui.models import ApiToken
from planner_ui.services.tokens import token_user
from planner_ui.stores.redis_store import redis_client, redis_key

log = logging.getLogger(__name__)
WINDOW_S = 60


class TokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        found = token_user(token)
        if found is None:
            return None
        api_token, user = found
        # The endpoints read request.user like the pages do, for one ownership rule.
        request.user = user
        return api_token


class TokenRateThrottle(BaseThrottle):
    """At most AGENTSITE_API_RATE_PER_MINUTE requests per token and minute."""

    def __init__(self) -> None:
        self._local = threading.local()

    def allow_request(self, request: HttpRequest) -> bool:
        token: Any = getattr(request, "auth", None)
        if not isinstance(token, ApiToken):
            return True
        allowed, self._local.wait = within_rate(
            "api-rate", token.digest[:24], settings.AGENTSITE_API_RATE_PER_MINUTE
        )
        return allowed

    def wait(self) -> float | None:
        return getattr(self._local, "wait", None)


def within_rate(kind: str, who: str, per_minute: int) -> tuple[bool, float]:
    """Count one request of `who` in this minute's window; whether it is within `per_minute`,
    and the seconds until the window ends."""
    now = time.time()
    window = int(now // WINDOW_S)
    wait = WINDOW_S - now % WINDOW_S
    key = redis_key(kind, who, window)
    try:
        pipe = redis_client().pipeline()
        pipe.incr(key)
        pipe.expire(key, WINDOW_S * 2)
        count, _ = pipe.execute()
    except Exception:  # redis-py raises several kinds; all mean the count is unknown
        log.warning("%s not counted: Redis did not answer", kind, exc_info=True)
        return True, wait
    return int(count) <= per_minute, wait
