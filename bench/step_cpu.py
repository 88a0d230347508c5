"""`python -m bench.step_cpu` (`make bench-step`): the CPU one step costs the app, in one process.

Every step of a few plans is executed here, one after another, by the same code a worker runs
(`step_execute`: claim, context, budget gate, the offline model at zero latency, recording the
call, finish, dispatch, publishing), on the bench's own folder and embedded Redis; the tasks the
scheduler enqueues are left in the queue. Without Celery, concurrency or watchers, what is left
is the app's own work per step, steadier than the full benchmark's figure and quick to compare
between two commits: `--profile` prints where it goes.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

from bench import shapes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.step_cpu", description=__doc__)
    parser.add_argument("--shapes", default="chain,layered,fanout")
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3, help="runs per shape, after a warm-up")
    parser.add_argument("--profile", action="store_true", help="print the top of a cProfile")
    args = parser.parse_args(argv)
    os.environ["AGENTSITE_OFFLINE_LATENCY_S"] = "0"

    from bench.__main__ import django_setup

    django_setup()
    from django.conf import settings

    from agentsite import embedded
    from bench.scheduler import refuse_other_workers

    redis = None
    if settings.REDIS_IS_EMBEDDED:
        redis = embedded.start_redis(
            settings.EMBEDDED_REDIS_SOCKET, log_path=settings.VAR_DIR / "logs" / "redis.log"
        )
    else:
        refuse_other_workers("")  # they would run the steps this process leaves queued
    try:
        for name in args.shapes.split(","):
            shape = shapes.build(name, args.size, seed=1, width=8)
            _run(shape)  # imports, caches and the database's pages warm up first
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
            if profile:
                pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    finally:
        if redis is not None:
            embedded.stop_processes([redis])
    return 0


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
