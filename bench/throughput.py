"""Throughput: many small runs at once, the load of many people using one installation.

Each run is a small fan-out (a root, its parallel children, the synthesis); all of them are
approved together and the figures are steps finished per second and CPU spent per step, by the
worker and by the whole stack.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from planner_ui.core.status import TERMINAL_RUN_STATUSES, RunStatus
from planner_ui.models import Run, RunEvent, Step
from planner_ui.services.runs import run_approve_plan

from . import metrics, shapes
from .cpu import CpuWindow, ms_per_step
from .scheduler import Stack, cpu_roots, scripted_run_create, workers_cpu_s
from .websocket import Watchers


def throughput_measure(
    count: int,
    *,
    owner: AbstractBaseUser,
    stack: Stack,
    size: int,
    timeout_s: float,
    slots: int,
    latency_s: float,
    watchers: Watchers | None = None,
    clients: int = 0,
) -> dict[str, Any]:
    """Approve `count` runs of a `size`-step fan-out at once, `clients` WebSocket clients
    watching them (dealt out over the runs); wait for all; their figures."""
    shape = shapes.build("fanout", size, seed=1, width=size)
    runs = [scripted_run_create(owner, shape) for _ in range(count)]
    ids = [run.pk for run in runs]
    asgi = [pid for role, pid in stack.pids.items() if role.startswith("asgi")]
    rss_before = sum(_rss_kb(pid) for pid in asgi)
    if watchers is not None and clients:
        # The log as stored, not as the objects above knew it: their events were numbered in
        # SQL, and clients that asked from 0 got the runs' creation replayed, which counted as
        # seconds of delivery (a p99 of 2.4 to 4.3 s that was history, not latency).
        last_seqs = dict(Run.objects.filter(pk__in=ids).values_list("pk", "last_event_seq"))
        watchers.watch_many(last_seqs, clients)
    rss_watched = sum(_rss_kb(pid) for pid in asgi)
    cpu = CpuWindow(cpu_roots(stack))
    cpu.start()
    started = time.monotonic()
    for run_id in ids:
        run_approve_plan(run_id)
    deadline = started + timeout_s
    connections: list[int] = []
    while Run.objects.filter(pk__in=ids).exclude(status__in=TERMINAL_RUN_STATUSES).exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{count} runs did not all finish within {timeout_s:g} s")
        connections.append(_database_connections())
        time.sleep(0.1)
    wall_s = time.monotonic() - started
    used = cpu.stop()
    received: list[tuple[float, bytes]] = []
    if watchers is not None and clients:
        watchers.wait_quiet(1.0, timeout=30.0)
        received = watchers.stop()
    failed = Run.objects.filter(pk__in=ids).exclude(status=RunStatus.SUCCEEDED).count()
    steps = count * len(shape.with_synthesis())
    by_process = used.get("by_process_s") or {}
    dispatch = _dispatch(ids, slots)
    delivered = metrics.event_latencies(received)
    return {
        "clients": clients,
        "ceiling_steps_per_s": round(slots / latency_s, 1) if latency_s else None,
        "steps_per_s_per_core": round(steps / wall_s / (os.cpu_count() or 1), 1),
        "dispatch": metrics.summary_ms(dispatch.after_parent_s),
        "dispatch_carried": metrics.summary_ms(dispatch.carried_s),
        "dispatch_through_queue": metrics.summary_ms(dispatch.through_queue_s),
        "dispatch_waited_for_slot": len(dispatch.waited_for_slot),
        "websocket": metrics.summary_ms(delivered.event_delays_s),
        "websocket_by_type": {
            kind: metrics.summary_ms(delays)
            for kind, delays in sorted(delivered.delays_by_type.items())
        },
        "asgi_kb_per_client": round((rss_watched - rss_before) / clients, 1) if clients else None,
        "database_connections_max": max(connections, default=None),
        "runs": count,
        "steps_per_run": len(shape.with_synthesis()),
        "steps": steps,
        "failed_runs": failed,
        "wall_s": round(wall_s, 3),
        "steps_per_s": round(steps / wall_s, 1),
        "worker_cpu_ms_per_step": ms_per_step(workers_cpu_s(by_process), steps),
        "database_cpu_ms_per_step": ms_per_step(by_process.get("database"), steps),
        "stack_cpu_ms_per_step": ms_per_step(used["ours_s"], steps),
        "cpu": used,
        "run_ids": ids,
    }


def _dispatch(run_ids: list[int], slots: int) -> metrics.Dispatch:
    """Dispatch over every step of every run at once: the slots are shared by all the runs, so
    a step is left out when all of them were busy, with any run's steps. A step a parent's
    process carried on to starts at its parent's end by construction: counted apart from those
    that went through the queue, as the main benchmark counts them."""
    carried = set(
        RunEvent.objects.filter(
            run_id__in=run_ids, type="step.started", payload__has_key="carried_from"
        ).values_list("run_id", "step_id")
    )
    timings = [
        metrics.StepTiming(
            f"{run_id}:{step_id}",
            [f"{run_id}:{parent}" for parent in depends_on],
            started_at.timestamp(),
            finished_at.timestamp(),
            carried=(run_id, step_id) in carried,
        )
        for run_id, step_id, depends_on, started_at, finished_at in Step.objects.filter(
            run_id__in=run_ids, started_at__isnull=False, finished_at__isnull=False
        ).values_list("run_id", "step_id", "depends_on", "started_at", "finished_at")
    ]
    first = min((t.started_at for t in timings), default=0.0)
    return metrics.dispatch_latencies(timings, first, slots)


def _rss_kb(pid: int) -> int:
    """A process's resident memory, from /proc (0 where there is none)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _database_connections() -> int:
    """Connections to this database now (PostgreSQL; 0 elsewhere)."""
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


def throughput_table(figures: dict[str, Any], database: str, slots: int) -> str:
    lines = [
        f"Throughput on {database}, {slots} worker slots: {figures['runs']} runs of "
        f"{figures['steps_per_run']} steps approved at once, {figures['clients']} WebSocket "
        "clients watching them",
        f"  {figures['steps']} steps in {figures['wall_s']:.2f} s: "
        f"{figures['steps_per_s']:.1f} steps/s ({figures['steps_per_s_per_core']} per core; "
        f"ceiling {figures['ceiling_steps_per_s']}); CPU per step: worker "
        f"{figures['worker_cpu_ms_per_step']} ms, whole stack "
        f"{figures['stack_cpu_ms_per_step']} ms; runs that did not succeed: "
        f"{figures['failed_runs']}",
        f"  dispatch p50 / p99 {figures['dispatch']['p50_ms']} / {figures['dispatch']['p99_ms']} "
        f"ms ({figures['dispatch']['count']} steps; "
        f"{figures['dispatch_waited_for_slot']} waited for a slot and are left out): "
        f"{_split(figures)}",
    ]
    if figures["clients"]:
        lines.append(
            f"  WebSocket event p50 / p99 {figures['websocket']['p50_ms']} / "
            f"{figures['websocket']['p99_ms']} ms over {figures['websocket']['count']} "
            f"deliveries; ASGI server memory {figures['asgi_kb_per_client']} KB per client"
        )
    if figures["database_connections_max"] is not None and database.startswith("postgresql"):
        lines.append(
            f"  PostgreSQL connections held: at most {figures['database_connections_max']}"
        )
    return "\n".join(lines)


def _split(figures: dict[str, Any]) -> str:
    """How the dispatched steps were claimed: carried on by a parent's process, or through the
    queue (with its own p50 / p99 where there are any)."""
    queued = figures["dispatch_through_queue"]
    through = (
        f"{queued['count']} through the queue at {queued['p50_ms']} / {queued['p99_ms']} ms"
        if queued["count"]
        else "none through the queue"
    )
    return f"{figures['dispatch_carried']['count']} carried on, {through}"
