"""The Celery app; workers start with `celery -A agentsite worker`."""

import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from celery import Celery, bootsteps
from celery.signals import worker_init, worker_process_init, worker_ready

from .heap import heap_freeze

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

log = logging.getLogger(__name__)


class DjangoSettings(Mapping[str, Any]):
    """Django's settings as a plain mapping, read once, when Celery first loads its
    configuration (Django's settings are ready by then, as they are for the usual
    `config_from_object("django.conf:settings")`). Read through Django's LazySettings, each of
    the keys Celery looks up to send a task cost about 10 µs, most of them keys that are not set
    and raise AttributeError on their way through: a fifth of the CPU a task's send costs."""

    def __init__(self) -> None:
        self._values: dict[str, Any] | None = None

    def _read(self) -> dict[str, Any]:
        if self._values is None:
            from django.conf import settings

            self._values = {key: getattr(settings, key) for key in dir(settings) if key.isupper()}
        return self._values

    def __getitem__(self, key: str) -> Any:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


app = Celery("agentsite")
app.config_from_object(DjangoSettings(), namespace="CELERY")
app.autodiscover_tasks()

from . import broker_client, broker_reconnect, worker_log  # noqa: E402,F401 - worker_log connects on import

broker_reconnect.install()  # a busy worker survives a Redis restart: see that module
broker_client.install()  # one Redis client per channel for publishing: see that module


@worker_ready.connect
def _say_alive(sender: object, **_: object) -> None:
    """Every worker tells Redis every few seconds that it is alive: the submission form and
    /readyz count the ones that did recently."""
    from planner_ui.services.leases import worker_alive_beat

    worker_alive_beat(getattr(sender, "hostname", "worker"))


@worker_ready.connect
def _sweep_here(sender: object, **_: object) -> None:
    """Every worker sweeps, one of them per period (the database's turn): lost work comes back
    with no beat running, and whichever process dies.

    Not on SQLite: SQLite is not fork-safe, and a pool process forked while the sweep had the
    database open (a process is forked again whenever one exits) inherited SQLite's in-process
    state of the file and read a stale copy of it for good (seen: it never saw a new
    experiment; earlier, "database disk image is malformed"). SQLite means one machine, and
    there beat sweeps from a pool process (`make run` starts it with the worker)."""
    from django.db import connection

    from planner_ui.services.sweeper import sweeper_start

    if connection.vendor != "sqlite":
        sweeper_start(getattr(sender, "hostname", "worker"))


class _AliveOnConnect(bootsteps.StartStopStep):
    """Says the worker is alive each time it (re)connects to the broker, not up to a beat's
    interval later: a Redis that came back empty (no persistence) forgot it."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, parent: Any) -> None:
        from planner_ui.services.leases import worker_alive_say

        try:
            worker_alive_say(parent.hostname)
        except Exception:  # the beat says it again in a few seconds
            log.warning("could not say that worker %s is alive", parent.hostname, exc_info=True)


app.steps["consumer"].add(_AliveOnConnect)


@worker_init.connect
def _preload(**_: object) -> None:
    """Before the pool forks: what every step imports is then imported once, not per process
    (py-spy found a worker process's first step spending about 0.1 s importing the services)."""
    from django.apps import apps

    from planner_ui.providers import preload

    preload()
    if apps.ready:  # Celery's Django fixup has set Django up by now; the services need it
        from planner_ui.services import leases, proposals, replans, runs, steps, sweep  # noqa: F401
    # Connected here, so that it runs after the Django fixup's own handler, which closes the
    # database connections a process inherits.
    worker_process_init.connect(_warm_up, weak=False)
    heap_freeze()  # before the pool forks: its processes inherit it frozen


_WARM_UP_TIMEOUT_S = 1.0


def _warm_up(**_: object) -> None:
    """In each new pool process, open what every step uses (11 to 17 ms of CPU): without this,
    a process's first step opened its database connection, its Redis client and the queue's
    producer, and the first run after a start sent its children later (queued to claimed, at
    the median, 25 to 28 ms against 16 to 22)."""
    from django.db import connection

    from planner_ui.services.broadcast import warm_up

    if os.environ.get("AGENTSITE_STATEMENT_TIMES"):  # the benchmark's --statement-times
        from planner_ui.stores import statement_times

        statement_times.install(Path(os.environ["AGENTSITE_STATEMENT_TIMES"]))
    if os.environ.get("AGENTSITE_STATEMENT_DELAY_MS"):  # the benchmark's --db-delay-ms
        from planner_ui.stores import statement_delay

        statement_delay.install(float(os.environ["AGENTSITE_STATEMENT_DELAY_MS"]))

    try:
        pool = getattr(connection, "pool", None)  # PostgreSQL's, when AGENTSITE_DB_POOL_MAX > 0
        if pool is not None:
            # Briefly: the worker's main process waits for this process to start, and its warm
            # shutdown waits too, so a database that does not answer must not hold it for the
            # pool's whole timeout (10 s: a SIGTERM then ended in a SIGKILL). Django opens its
            # pool on the first connection; this is the first.
            pool.open()
            pool.putconn(pool.getconn(timeout=_WARM_UP_TIMEOUT_S))
        else:
            connection.ensure_connection()
    except Exception:  # a step opens it itself and says what is wrong
        log.warning("could not open the database connection ahead", exc_info=True)
    try:
        warm_up()  # Redis, whatever the database did
    except Exception:
        log.warning("could not open the Redis connections ahead", exc_info=True)
    heap_freeze()  # and what opening them built
