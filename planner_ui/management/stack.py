"""What a command that submits runs needs running: beside a `make run` it uses that Redis and
its workers; alone it brings up an embedded Redis and a worker of its own for its duration."""

from __future__ import annotations

import os
from typing import Any, TextIO

from django.conf import settings
from django.core.management.base import CommandError

from agentsite import embedded


def bring_up_what_is_missing(stderr: TextIO | Any, name: str, what: str) -> list:
    """Start what does not answer; returns the processes to stop (embedded.stop_processes).
    `name` tells the worker's node and log files apart ("runtask", "evaluate"), `what` is
    what the command runs ("task"), for its messages."""
    procs = []
    logs = settings.VAR_DIR / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    if not embedded.redis_ping(settings.REDIS_URL):
        if not settings.REDIS_IS_EMBEDDED:
            raise CommandError(f"REDIS_URL {settings.REDIS_URL} does not answer.")
        stderr.write("No Redis running: starting the embedded one.")
        log_path = logs / f"{name}-redis.log"
        procs.append(embedded.start_redis(settings.EMBEDDED_REDIS_SOCKET, log_path=log_path))
    try:
        embedded.wait_for_worker(timeout=2.0)
    except RuntimeError:
        stderr.write(f"No Celery worker answering: starting one for this {what}.")
        env = dict(os.environ, REDIS_URL=settings.REDIS_URL)
        log_path = logs / f"{name}-worker.log"
        procs.append(embedded.start_worker(env=env, log_path=log_path, hostname=f"{name}-%h"))
        try:
            embedded.wait_for_worker(name, timeout=60)
        except RuntimeError:
            embedded.stop_processes(procs)
            raise CommandError(f"The worker did not start; see {log_path}") from None
    return procs
