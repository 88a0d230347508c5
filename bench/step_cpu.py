"""`python -m bench.step_cpu` (`make bench-step`): the CPU one step costs the app, in one process.

Every step of a few plans is executed here, one after another, by the same code a worker runs
(`step_execute`: claim, context, budget gate, the offline model at zero latency, recording the
call, finish, dispatch, publishing), on the bench's own folder and embedded Redis; the tasks the
scheduler enqueues are left in the queue. Without Celery, concurrency or watchers, what is left
is the app's own work per step, steadier than the full benchmark's figure and quick to compare
between two commits: `--profile` prints where it goes. On SQLite, `--holds` prints how long
each kind of write transaction held the database's write lock (every other process's writes
queue for it), by the service function that opened it.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from bench import shapes
from bench.in_process import app_in_process


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.step_cpu", description=__doc__)
    parser.add_argument("--shapes", default="chain,layered,fanout")
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3, help="runs per shape, after a warm-up")
    parser.add_argument("--profile", action="store_true", help="print the top of a cProfile")
    parser.add_argument(
        "--holds", action="store_true", help="time the write lock's holds (SQLite only)"
    )
    args = parser.parse_args(argv)
    with app_in_process():
        for name in args.shapes.split(","):
            shape = shapes.build(name, args.size, seed=1, width=8)
            _run(shape)  # imports, caches and the database's pages warm up first
            holds = _holds_timed() if args.holds else None
            profile = cProfile.Profile() if args.profile else None
            started, steps = time.process_time(), 0
            if profile:
                profile.enable()
            for _ in range(args.repeat):
                steps += _run(shape)
            if profile:
                profile.disable()
            cpu_ms = 1000 * (time.process_time() - started) / steps
            print(f"{name:8} {steps:4d} steps  {cpu_ms:5.1f} ms CPU per step", flush=True)
            if holds is not None:
                _holds_print(holds)
            if profile:
                pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    return 0


def _holds_timed() -> dict[str, list[float]]:
    """From now on, each write transaction's hold of the write lock, from its BEGIN to the end
    of its COMMIT or ROLLBACK, by the service function that opened it (agentsite.sqlite takes
    the lock with the BEGIN and lets it go with the end); what earlier calls timed is dropped.
    Empty elsewhere than on SQLite."""
    from django.db import DEFAULT_DB_ALIAS, connections

    database = connections[DEFAULT_DB_ALIAS]
    backend = type(database)
    if database.vendor != "sqlite":
        return {}
    if not hasattr(backend, "_bench_holds"):
        holds: dict[str, list[float]] = defaultdict(list)
        begin, commit, rollback = (
            backend._start_transaction_under_autocommit,
            backend._commit,
            backend._rollback,
        )

        def timed_begin(self: Any) -> None:
            begin(self)
            self._bench_since = (time.perf_counter(), _opener())

        def timed(end: Callable[[Any], None]) -> Callable[[Any], None]:
            def end_timed(self: Any) -> None:
                try:
                    end(self)
                finally:
                    since, self._bench_since = getattr(self, "_bench_since", None), None
                    if since is not None:
                        holds[since[1]].append(time.perf_counter() - since[0])

            return end_timed

        backend._start_transaction_under_autocommit = timed_begin
        backend._commit, backend._rollback = timed(commit), timed(rollback)
        backend._bench_holds = holds
    backend._bench_holds.clear()  # what the warm-up held
    return backend._bench_holds


def _opener() -> str:
    """The innermost service function on the stack, but for the helpers every write goes
    through (stores.sql, services.events)."""
    frame = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("planner_ui.services.") and module not in _HELPERS:
            return f"{module.rsplit('.', 1)[1]}.{frame.f_code.co_qualname}"
        frame = frame.f_back
    return "other"


_HELPERS = {"planner_ui.stores.sql", "planner_ui.services.events"}


def _holds_print(holds: dict[str, list[float]]) -> None:
    for opener, times in sorted(holds.items(), key=lambda item: -sum(item[1])):
        ms = sorted(1000 * t for t in times)
        print(
            f"    holds the write lock: {opener:36} {len(ms):4d} times, p50 "
            f"{statistics.median(ms):5.2f} ms, p90 {ms[int(0.9 * (len(ms) - 1))]:5.2f} ms",
            flush=True,
        )
    holds.clear()


def _run(shape: shapes.Shape) -> int:
    """Execute every step of one run of the shape as it becomes ready; how many ran."""
    from bench.scheduler import bench_user, runs_delete, scripted_run_create
    from planner_ui.core.status import StepStatus
    from planner_ui.models import Step
    from planner_ui.services.runs import run_approve_plan
    from planner_ui.services.steps import step_execute

    run = scripted_run_create(bench_user(), shape)
    run_approve_plan(run.pk)
    ran = 0
    while ready := list(
        Step.objects.filter(run_id=run.pk, status=StepStatus.QUEUED).values_list(
            "step_id", flat=True
        )
    ):
        for step_id in ready:
            step_execute(run.pk, step_id, "bench-step-cpu")
            ran += 1
    runs_delete([run.pk])
    return ran


if __name__ == "__main__":
    raise SystemExit(main())
