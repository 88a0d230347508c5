"""The sweep on a timer in every worker: no single process, such as Celery beat, has to live for
a dead worker's step to be taken over or a lost message sent again. With the worker and beat
lost together, beat's sweep alone left a step to the broker's visibility timeout (642 s).

Each worker's main process asks every AGENTSITE_SWEEP_S, a little earlier or later each time
so that the fleet's asks spread out; the database lets one through per period
(services.sweep.sweep_claim), so a fleet of any size sweeps about once a period.
"""

from __future__ import annotations

import logging
import os
import random
import threading

from django.conf import settings
from django.db import connections

from .sweep import sweep

log = logging.getLogger(__name__)


class _NoForkMidSweep:
    """Holds off a fork while a sweep has its database connection open.

    The worker's main process forks its pool's processes (at start, and again for each one that
    dies). A child that inherits an open SQLite connection closes it when it lets the copy go,
    checkpointing the database's write-ahead log from a snapshot of another process's state:
    the test database came out "malformed" after a worker was killed during one. A PostgreSQL
    socket shared across a fork is no better. So a fork waits for the sweep in progress to
    close its connection (a sweep takes well under a second; a wait is cut off at 30 s)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held_for_fork = False
        os.register_at_fork(
            before=self._before, after_in_parent=self._after, after_in_child=self._in_child
        )

    def _before(self) -> None:
        self.held_for_fork = self.lock.acquire(timeout=30)

    def _after(self) -> None:
        if self.held_for_fork:
            self.held_for_fork = False
            self.lock.release()

    def _in_child(self) -> None:
        # The child has no sweeper thread; its copy of the lock is held, so it gets a new one.
        self.lock = threading.Lock()
        self.held_for_fork = False


_no_fork = _NoForkMidSweep()


class Sweeper(threading.Thread):
    """Sweeps every AGENTSITE_SWEEP_S (give or take a tenth) until stopped."""

    def __init__(self, worker: str) -> None:
        super().__init__(name="sweeper", daemon=True)
        self.worker = worker
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(settings.AGENTSITE_SWEEP_S * random.uniform(0.9, 1.1)):
            with _no_fork.lock:
                self._sweep_once()

    def _sweep_once(self) -> None:
        try:
            swept = sweep(self.worker)
            done = [f"{kind.replace('_', ' ')} {n}" for kind, n in swept.items() if n]
            if done:  # as beat's sweep says it in the worker's log (agentsite.worker_log)
                log.info("sweep: %s", ", ".join(done))
        except Exception:  # the database or Redis is away: the next period tries again
            log.warning("the sweep failed", exc_info=True)
        finally:
            # This thread's connection, not kept open between sweeps: a worker's main process
            # holds none otherwise, and it forks its pool's processes (_NoForkMidSweep).
            connections.close_all()

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)


def sweeper_start(worker: str) -> Sweeper:
    """Started in each worker's main process once it is ready."""
    thread = Sweeper(worker)
    thread.start()
    return thread
