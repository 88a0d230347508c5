"""Throughput: many small runs at once, the load of many people using one installation.

Each run is a small fan-out (a root, its parallel children, the synthesis); all of them are
approved together and the figures are steps finished per second and CPU spent per step, by the
worker and by the whole stack.
"""

from __future__ import annotations

import os
import time
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from planner_ui.core.status import TERMINAL_RUN_STATUSES, RunStatus
from planner_ui.models import Run
from planner_ui.services.runs import run_approve_plan

from . import shapes
from .cpu import CpuWindow
from .scheduler import Stack, scripted_run_create, workers_cpu_s


def throughput_measure(
    count: int, *, owner: AbstractBaseUser, stack: Stack, size: int, timeout_s: float
) -> dict[str, Any]:
    """Approve `count` runs of a `size`-step fan-out at once; wait for all; their figures."""
    shape = shapes.build("fanout", size, seed=1, width=size)
    runs = [scripted_run_create(owner, shape) for _ in range(count)]
    ids = [run.pk for run in runs]
    cpu = CpuWindow({"benchmark": os.getpid(), **stack.pids})
    cpu.start()
    started = time.monotonic()
    for run_id in ids:
        run_approve_plan(run_id)
    deadline = started + timeout_s
    while Run.objects.filter(pk__in=ids).exclude(status__in=TERMINAL_RUN_STATUSES).exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{count} runs did not all finish within {timeout_s:g} s")
        time.sleep(0.1)
    wall_s = time.monotonic() - started
    used = cpu.stop()
    failed = Run.objects.filter(pk__in=ids).exclude(status=RunStatus.SUCCEEDED).count()
    steps = count * len(shape.with_synthesis())
    worker = workers_cpu_s(used.get("by_process_s") or {})
    return {
        "runs": count,
        "steps_per_run": len(shape.with_synthesis()),
        "steps": steps,
        "failed_runs": failed,
        "wall_s": round(wall_s, 3),
        "steps_per_s": round(steps / wall_s, 1),
        "worker_cpu_ms_per_step": None if worker is None else round(worker * 1000 / steps, 1),
        "stack_cpu_ms_per_step": (
            None if used["ours_s"] is None else round(used["ours_s"] * 1000 / steps, 1)
        ),
        "cpu": used,
        "run_ids": ids,
    }


def throughput_table(figures: dict[str, Any], database: str, slots: int) -> str:
    return "\n".join(
        [
            f"Throughput on {database}, {slots} worker slots: {figures['runs']} runs of "
            f"{figures['steps_per_run']} steps approved at once",
            f"  {figures['steps']} steps in {figures['wall_s']:.2f} s: "
            f"{figures['steps_per_s']:.1f} steps/s; CPU per step: worker "
            f"{figures['worker_cpu_ms_per_step']} ms, whole stack "
            f"{figures['stack_cpu_ms_per_step']} ms; runs that did not succeed: "
            f"{figures['failed_runs']}",
        ]
    )
