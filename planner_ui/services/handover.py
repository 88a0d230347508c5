"""Tasks the queue refused, sent again: a Redis that restarts or fails over is a wait, not a
reason to fail the run.

A refused send is kept in this process and sent again with back-off for AGENTSITE_SEND_RETRY_S;
after that it is left to the sweep (services.sweep), which hands out again queued steps and
planning nobody took up. Its run waits meanwhile, its step stays queued. Sending twice does no
harm: one claim of a step wins, and the planner's work holds a lease.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celery import current_app
from django.conf import settings

log = logging.getLogger(__name__)

# Waits between tries: the first soon (a restart takes a second or two), then longer.
FIRST_WAIT_S = 0.25
LONGEST_WAIT_S = 4.0

Send = Callable[[Any], None]


@dataclass
class _Refused:
    send: Send
    what: str
    refused_at: float
    give_up_at: float


class _Resender(threading.Thread):
    """The one thread of a process that sends refused tasks again, all of them in each try."""

    def __init__(self) -> None:
        super().__init__(name="task-resender", daemon=True)
        self.pid = os.getpid()
        self._refused: list[_Refused] = []
        self._lock = threading.Lock()
        self._more = threading.Event()

    def add(self, refused: _Refused) -> None:
        with self._lock:
            self._refused.append(refused)
        self._more.set()

    def pending(self) -> int:
        with self._lock:
            return len(self._refused)

    def run(self) -> None:
        wait = FIRST_WAIT_S
        while True:
            self._more.wait()
            time.sleep(wait)
            with self._lock:
                batch, self._refused = self._refused, []
                self._more.clear()
            now = time.monotonic()
            given_up = [r for r in batch if r.give_up_at <= now]
            batch = [r for r in batch if r.give_up_at > now]
            for refused in given_up:
                log.warning(
                    "gave up handing %s to the queue after %.0f s: the sweep hands it out once "
                    "the queue answers",
                    refused.what,
                    now - refused.refused_at,
                )
            if not batch:
                wait = FIRST_WAIT_S
                continue
            try:
                with current_app.producer_or_acquire() as producer, producer.batch():
                    for refused in batch:
                        refused.send(producer)
            except Exception as exc:  # kombu raises several types; all mean "not now"
                log.info("the queue still refuses %d task(s): %s", len(batch), exc)
                with self._lock:
                    self._refused[:0] = batch
                self._more.set()
                wait = min(wait * 2, LONGEST_WAIT_S)
                continue
            wait = FIRST_WAIT_S
            for refused in batch:
                log.info(
                    "handed %s to the queue %.1f s after it was refused",
                    refused.what,
                    time.monotonic() - refused.refused_at,
                )


_resender: _Resender | None = None
_resender_lock = threading.Lock()


def send_again(send: Send, what: str) -> float:
    """Send `send` again in the background until the queue takes it or AGENTSITE_SEND_RETRY_S
    has passed; how many seconds it will try."""
    global _resender
    retry_s = settings.AGENTSITE_SEND_RETRY_S
    if retry_s <= 0:
        return 0.0
    with _resender_lock:
        if _resender is None or _resender.pid != os.getpid():  # none yet, or forked since
            _resender = _Resender()
            _resender.start()
        resender = _resender
    now = time.monotonic()
    resender.add(_Refused(send, what, refused_at=now, give_up_at=now + retry_s))
    return retry_s


def sends_pending() -> int:
    """How many refused sends this process is still trying."""
    return _resender.pending() if _resender is not None and _resender.pid == os.getpid() else 0
