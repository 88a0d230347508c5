"""The sweep on a timer in every worker: no single process, such as Celery beat, has to live for
a dead worker's step to be taken over or a lost message sent again (nor for a template's
schedule to fire). With the worker and beat
lost together, beat's sweep alone left a step to the broker's visibility timeout (642 s).

Each worker's main process asks every AGENTSITE_SWEEP_S, a little earlier or later each time
so that the fleet's asks spread out; the database lets one through per period
(services.sweep.sweep_claim), so a fleet of any size sweeps about once a period.
"""

from __future__ import annotations

import logging
import random
import threading

from django.conf import settings
from django.db import connections

from .sweep import sweep
from .templates import template_schedules_due

log = logging.getLogger(__name__)


class Sweeper(threading.Thread):
    """Sweeps every AGENTSITE_SWEEP_S (give or take a tenth) until stopped."""

    def __init__(self, worker: str) -> None:
        super().__init__(name="sweeper", daemon=True)
        self.worker = worker
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(settings.AGENTSITE_SWEEP_S * random.uniform(0.9, 1.1)):
            try:
                swept = sweep(self.worker)
                done = [f"{kind.replace('_', ' ')} {n}" for kind, n in swept.items() if n]
                if done:  # as beat's sweep says it in the worker's log (agentsite.worker_log)
                    log.info("sweep: %s", ", ".join(done))
                # Templates' schedules too, for installations without beat (compose, make run):
                # each due run is claimed in the database, so the fleet starts it once.
                if started := template_schedules_due():
                    log.info("scheduled templates: %d run(s) started", started)
            except Exception:  # the database or Redis is away: the next period tries again
                log.warning("the sweep failed", exc_info=True)
            finally:
                # This thread's connection, not kept open between sweeps: a worker's main
                # process holds none otherwise, and it forks its pool's processes.
                connections.close_all()

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)


def sweeper_start(worker: str) -> Sweeper:
    """Started in each worker's main process once it is ready."""
    thread = Sweeper(worker)
    thread.start()
    return thread
