"""CPU seconds on Linux: the whole machine's, and those of the benchmark's own processes.

On a 2-core machine the figures are often limited by CPU, and on a shared one by someone
else's; what the other processes used during a run says which. Elsewhere these return None.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")


def _ticks() -> int:
    try:
        return os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError, AttributeError):
        return 100


def _stat(process: Path) -> list[str]:
    """The fields of /proc/PID/stat after the command name, from the state on (so `[1]` is
    the parent, `[11]` the user time): the name may hold spaces and parentheses, so the
    fields are split after its last ")"."""
    return (process / "stat").read_text().rpartition(")")[2].split()


def ms_per_step(seconds: float | None, steps: int) -> float | None:
    """CPU seconds as milliseconds a step, rounded as the result files keep them."""
    return None if seconds is None else round(seconds * 1000 / steps, 1)


def machine_busy_s() -> float | None:
    """CPU seconds spent by all cores on anything but idling since boot."""
    try:
        fields = (_PROC / "stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    values = [int(value) for value in fields[:8]]  # user nice system idle iowait irq softirq steal
    return (sum(values) - values[3] - values[4]) / _ticks()


def cpu_by_root(roots: dict[str, int]) -> dict[str, float] | None:
    """CPU seconds used so far by each named process together with its live descendants.

    A process counts once, for the nearest named ancestor: a Celery pool child for the
    worker, not for the benchmark process that started the worker.
    """
    parent_of: dict[int, int] = {}
    used: dict[int, float] = {}
    try:
        entries = list(_PROC.iterdir())
    except OSError:
        return None
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            rest = _stat(entry)
        except OSError:
            continue  # ended meanwhile
        pid = int(entry.name)
        parent_of[pid] = int(rest[1])
        # utime + stime, and cutime + cstime: what its children used that it has reaped (a
        # database server's backends that ended, each with its connection).
        used[pid] = sum(int(rest[field]) for field in (11, 12, 13, 14)) / _ticks()
    name_of = {pid: name for name, pid in roots.items()}
    totals = dict.fromkeys(roots, 0.0)
    for pid, seconds in used.items():
        ancestor = pid
        while ancestor > 1 and ancestor not in name_of:
            ancestor = parent_of.get(ancestor, 0)
        if ancestor in name_of:
            totals[name_of[ancestor]] += seconds
    return totals


@dataclass
class CpuWindow:
    """What the machine and each of our processes used between `start()` and `stop()`."""

    roots: dict[str, int]
    machine_start: float | None = None
    ours_start: dict[str, float] | None = None
    wall_start: float = 0.0

    def start(self) -> None:
        self.machine_start = machine_busy_s()
        self.ours_start = cpu_by_root(self.roots)
        self.wall_start = time.monotonic()

    def stop(self) -> dict[str, object]:
        wall_s = time.monotonic() - self.wall_start
        machine, ours = machine_busy_s(), cpu_by_root(self.roots)
        if None in (machine, ours, self.machine_start, self.ours_start) or wall_s <= 0:
            return {
                "window_s": round(wall_s, 3),
                "ours_s": None,
                "others_s": None,
                "busy_fraction": None,
                "by_process_s": {},
            }
        machine_used = machine - self.machine_start
        by_process = {name: round(ours[name] - self.ours_start[name], 2) for name in ours}
        ours_used = sum(by_process.values())
        return {
            "window_s": round(wall_s, 3),
            "ours_s": round(ours_used, 2),
            # Our processes' ticks are sampled apart from the machine's: clamp the noise.
            "others_s": round(max(0.0, machine_used - ours_used), 2),
            "busy_fraction": round(min(1.0, machine_used / (wall_s * (os.cpu_count() or 1))), 3),
            "by_process_s": by_process,
        }


def database_server_pid() -> int | None:
    """The PostgreSQL server the default connection talks to, when it runs on this machine:
    its first process, whose children are the backends (every connection's, the benchmark's
    included) and its own workers (WAL writer, checkpointer). None for SQLite, which runs in
    the processes that use it, and for a server elsewhere."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    try:
        # A server in a container of its own numbers its processes apart: check the name.
        if not (_PROC / str(backend) / "cmdline").read_bytes().startswith(b"postgres"):
            return None
        return int(_stat(_PROC / str(backend))[1])
    except OSError:
        return None
