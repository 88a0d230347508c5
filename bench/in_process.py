"""The set-up of the benchmarks that run the app's code in their own process (bench.step_cpu,
bench.pages): Django on the bench's folder, the offline model at zero latency, and a Redis for
what the steps publish and enqueue, with no worker to take the tasks."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def app_in_process() -> Iterator[None]:
    os.environ["AGENTSITE_OFFLINE_LATENCY_S"] = "0"
    from bench.__main__ import django_setup

    django_setup()
    from django.conf import settings

    from agentsite import embedded
    from agentsite.heap import heap_freeze
    from bench.scheduler import refuse_other_workers

    # The processes these stand for froze their heap once the app was loaded (agentsite.heap).
    heap_freeze(views=True)
    redis = None
    if settings.REDIS_IS_EMBEDDED:
        redis = embedded.start_redis(
            settings.EMBEDDED_REDIS_SOCKET, log_path=settings.VAR_DIR / "logs" / "redis.log"
        )
    else:
        refuse_other_workers("")  # they would run the steps this process leaves queued
    try:
        yield
    finally:
        if redis is not None:
            embedded.stop_processes([redis])
