"""Who is working on what, said every few seconds: a step's heartbeat in its row, a lease in
Redis for the planner's work, and each worker's own sign of life.

A heartbeat older than the lease means the work lost its worker, and the sweep
(services.sweep) hands it to another; a lease held by a live worker keeps a second one from
starting the same work.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator

import redis
from django.conf import settings
from django.db import close_old_connections, connections
from django.db.models.functions import Now

from planner_ui.core.status import StepStatus
from planner_ui.models import Step
from planner_ui.stores.redis_store import redis_client, redis_key

log = logging.getLogger(__name__)


class _Beat(threading.Thread):
    """Calls `beat` every `interval_s` until stopped; gives up when `beat` says it lost."""

    def __init__(self, beat: Callable[[], bool], interval_s: float, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._beat = beat
        self._interval = interval_s
        self._halt = threading.Event()
        self.lost = False

    def run(self) -> None:
        try:
            while not self._halt.wait(self._interval):
                try:
                    if not self._beat():
                        self.lost = True
                        return
                except Exception:  # a missed beat is retried; the lease allows several
                    log.warning("heartbeat %s failed", self.name, exc_info=True)
        finally:
            # This thread's own database connection, if the beat used one.
            connections.close_all()

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)


class StepBeat:
    """One step's heartbeat while its worker runs it; `lost` once another worker took it over."""

    def __init__(self, run_id: int, step_id: str, worker: str) -> None:
        self.run_id, self.step_id, self.worker = run_id, step_id, worker
        self.lost = False

    def beat(self) -> bool:
        return bool(
            Step.objects.filter(
                run_id=self.run_id,
                step_id=self.step_id,
                status=StepStatus.RUNNING,
                worker=self.worker,
            ).update(heartbeat_at=Now())  # the database's clock: the sweep compares with it
        )


class _StepBeats(threading.Thread):
    """The one thread of a process that keeps the heartbeats of the steps it runs. A thread per
    step cost its start and its join at every step's start and end: with eight steps ending
    together on two cores, each waits for the interpreter's lock, 1 to 5 ms of a step's way to
    its model call."""

    def __init__(self) -> None:
        super().__init__(name="step-heartbeats", daemon=True)
        self.pid = os.getpid()
        self._steps: set[StepBeat] = set()
        self._lock = threading.Lock()
        self._interval = settings.AGENTSITE_HEARTBEAT_S
        self._shorter = threading.Event()

    def hold(self, beat: StepBeat) -> None:
        with self._lock:
            self._steps.add(beat)
        if settings.AGENTSITE_HEARTBEAT_S < self._interval:
            self._shorter.set()  # tests shorten it; a step's start wakes nothing otherwise

    def drop(self, beat: StepBeat) -> None:
        with self._lock:
            self._steps.discard(beat)

    def run(self) -> None:
        due = time.monotonic() + self._interval
        while True:
            self._shorter.wait(max(0.0, due - time.monotonic()))
            self._interval = settings.AGENTSITE_HEARTBEAT_S
            if self._shorter.is_set():
                self._shorter.clear()
                due = min(due, time.monotonic() + self._interval)
                continue
            due = time.monotonic() + self._interval
            with self._lock:
                held = list(self._steps)
            if not held:
                connections.close_all()  # this thread's, if it beat before: none kept idle
                continue
            close_old_connections()
            for beat in held:
                try:
                    if not beat.beat():
                        beat.lost = True  # taken over after a stall: stop beating for it
                        self.drop(beat)
                except Exception:  # a missed beat is retried; the lease allows several
                    log.warning("heartbeat of step %s failed", beat.step_id, exc_info=True)


_step_beats: _StepBeats | None = None


@contextlib.contextmanager
def step_heartbeat(run_id: int, step_id: str, worker: str) -> Iterator[StepBeat]:
    """While the block runs, keep the step's heartbeat fresh for as long as this worker holds
    it (another may have taken it over after a long stall: then this one stops beating)."""
    global _step_beats
    if _step_beats is None or _step_beats.pid != os.getpid():  # none yet, or forked since
        _step_beats = _StepBeats()
        _step_beats.start()
    beats, beat = _step_beats, StepBeat(run_id, step_id, worker)
    beats.hold(beat)
    try:
        yield beat
    finally:
        beats.drop(beat)


@contextlib.contextmanager
def task_lease(*name: object) -> Iterator[bool]:
    """Hold the lease `name` while the block runs, refreshed every heartbeat; yields False (and
    holds nothing) when a live worker holds it already, so the caller leaves the work to it."""
    key = redis_key("lease", *name)
    holder = f"{socket.gethostname()}:{threading.get_ident()}:{time.monotonic()}"
    ttl = max(1, round(settings.AGENTSITE_STEP_LEASE_S))
    client = redis_client()
    try:
        acquired = bool(client.set(key, holder, nx=True, ex=ttl))
    except redis.RedisError:
        log.warning("no lease %s: Redis refused; going ahead", key, exc_info=True)
        yield True
        return
    if not acquired:
        yield False
        return

    def beat() -> bool:
        if client.get(key) != holder.encode():
            return False
        client.expire(key, ttl)
        return True

    thread = _Beat(beat, settings.AGENTSITE_HEARTBEAT_S, f"lease-{key}")
    thread.start()
    try:
        yield True
    finally:
        thread.stop()
        with contextlib.suppress(redis.RedisError):
            if client.get(key) == holder.encode():
                client.delete(key)


def lease_held(*name: object) -> bool:
    try:
        return bool(redis_client().exists(redis_key("lease", *name)))
    except redis.RedisError:
        return True  # cannot tell: do not start the work a second time


def once_per(seconds: float, *name: object) -> bool:
    """True the first time it is asked for `name` within `seconds`, across every process."""
    try:
        return bool(
            redis_client().set(redis_key("once", *name), 1, nx=True, ex=max(1, round(seconds)))
        )
    except redis.RedisError:
        return False


def seen_for(seconds: float, *name: object) -> bool:
    """True once `name` has been asked about for at least `seconds` (by any process), then
    the wait starts over: for a state with no timestamp of its own."""
    key = redis_key("seen", *name)
    # Timed by Redis alone, with how much of the key's life has passed: the sweeps that ask
    # run on machines whose clocks may disagree.
    life_ms = max(1000, round(seconds * 3000))
    try:
        client = redis_client()
        client.set(key, 1, nx=True, px=life_ms)
        left_ms = client.pttl(key)
        if left_ms >= 0 and life_ms - left_ms >= seconds * 1000:
            client.delete(key)
            return True
    except redis.RedisError:
        pass
    return False


# --- workers' signs of life -----------------------------------------------------------------------


def worker_alive_say(hostname: str) -> None:
    """The worker `hostname` is alive, for AGENTSITE_WORKER_ALIVE_S from now."""
    ttl = max(1, round(settings.AGENTSITE_WORKER_ALIVE_S))
    redis_client().set(redis_key("worker", hostname), round(time.time()), ex=ttl)


def worker_alive_beat(hostname: str) -> _Beat:
    """Started in each worker's main process: says every few seconds that it is alive."""

    def beat() -> bool:
        worker_alive_say(hostname)
        return True

    beat()
    thread = _Beat(beat, max(1.0, settings.AGENTSITE_WORKER_ALIVE_S / 3), f"alive-{hostname}")
    thread.start()
    return thread
