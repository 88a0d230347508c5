"""What a millisecond of CPU a step costs the makespan, and agentsite's CPU read against it.

On the benchmark's machine the steps of a layer end together and their work queues for the
cores: the makespan then follows the CPU a step costs the machine, whichever process spends it
(the worker, the database server, the ASGI server, the benchmark's own watchers). The floor,
run again with its tasks spending a given CPU besides (`--floor-cpu-ms`), measures that price
for each DAG, without a database, events or watchers to blur it: the slope of its ratio over
the CPU added. Read against it, agentsite's CPU a step beyond bare Celery's says how much of
its ratio's distance to the floor that CPU accounts for, and how much CPU a step a target
leaves.
"""

from __future__ import annotations

import time
from typing import Any

# Where a step's CPU goes in agentsite: the claim and the context before the model call, the
# record, the finish and the publishing after it (about 2 : 3, the fourteenth round).
BEFORE_CALL = 0.4


def split(cpu_ms: float) -> tuple[float, float]:
    """`cpu_ms` as the seconds a floor task spends before its sleep and after it."""
    return (cpu_ms * BEFORE_CALL / 1000, cpu_ms * (1 - BEFORE_CALL) / 1000)


def spin(cpu_s: float) -> None:
    """Keep this process busy until it has used `cpu_s` more of CPU time (a floor task's)."""
    until = time.process_time() + cpu_s
    while time.process_time() < until:
        pass


def slope(points: list[tuple[float, float]]) -> float | None:
    """The least-squares slope of ratio over CPU ms a step; None without two distinct CPUs."""
    if len({x for x, _ in points}) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return round(sum((x - mean_x) * (y - mean_y) for x, y in points) / spread, 5)


def sweep_line(name: str, size: int, floor: dict[str, Any]) -> str:
    runs = ", ".join(
        f"{run['cpu_ms']:g} ms {run['makespan_over_ideal']:.3f}" for run in floor["cpu_sweep"]
    )
    per_ms = floor["ratio_per_cpu_ms"]
    price = "" if per_ms is None else f"; {per_ms:.4f} of the ratio a ms of CPU a step"
    return f"  floor, {name} of {size}, with CPU a step besides: {runs}{price}"


def budget(run: dict[str, Any], steps: int) -> dict[str, Any] | None:
    """agentsite's CPU a step by process, beyond the floor's worker, and the ratio the floor's
    price puts on it; None without the floor's sweep or the run's CPU figures."""
    floor = run.get("floor") or {}
    per_ms = floor.get("ratio_per_cpu_ms")
    used = (run.get("cpu") or {}).get("by_process_s")
    if per_ms is None or not used or floor.get("worker_ms_per_step") is None:
        return None
    by_process = {name: round(1000 * s / steps, 1) for name, s in sorted(used.items())}
    over = round(sum(by_process.values()) - floor["worker_ms_per_step"], 1)
    return {
        "ms_per_step_by_process": by_process,
        "over_floor_ms_per_step": over,
        "floor_ratio_at_that_cpu": round(floor["makespan_over_ideal"] + per_ms * over, 3),
    }


def budget_line(run: dict[str, Any]) -> str:
    found = run["cpu_budget"]
    parts = ", ".join(f"{name} {ms}" for name, ms in found["ms_per_step_by_process"].items())
    return (
        f"  {run['shape']} of {run['plan_steps']}: CPU a step {parts} ms; "
        f"{found['over_floor_ms_per_step']} ms over bare Celery's "
        f"{run['floor']['worker_ms_per_step']}, which would put the floor at "
        f"{found['floor_ratio_at_that_cpu']:.2f} (agentsite {run['makespan_over_ideal']:.2f}, "
        f"floor {run['floor']['makespan_over_ideal']:.2f})"
    )
