"""`python -m bench` (`make bench`): how close parallel scheduling comes to the ideal.

Brings up its own Redis, Celery worker and Daphne on a private folder (var/bench/), runs each
DAG shape through the real scheduler with a simulated model of fixed latency and WebSocket
clients watching, prints a table and writes bench/results/<timestamp>.json and latest.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import shapes  # plain Python: Django is set up later, with the bench's folder
from bench.report import table, targets

BASE_DIR = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"
MAX_DEFAULT_SLOTS = 16
# Steps the warm-up gives each of the worker's processes (main, where it runs the warm-up).
WARM_UP_STEPS = 8

DEFINITIONS = {
    "makespan_s": "approval of the plan (Run.started_at) to the last step's finished_at, "
    "the synthesis step included",
    "ideal_makespan_s": "the makespan of a scheduler without any overhead, where every step "
    "takes exactly one model call's latency and ready steps start in plan order as slots free "
    "up; with slots >= width it is critical_path_steps x latency (synthesis included)",
    "speedup": "over running the same model calls one after another with no overhead: "
    "steps_run x latency / makespan",
    "ideal_speedup": "steps_run / ideal_makespan_steps",
    "mean_concurrency": "sum of the measured step durations (started_at to finished_at) / "
    "makespan: how many steps ran at once on average, overheads included",
    "step_overhead_p50_ms": "median step duration minus the model call's latency: the app's "
    "own work inside a step (the claim's event, the context, the budget gate, live text, "
    "recording the call, the finish)",
    "dispatch": "per step with dependencies: its started_at minus the latest finished_at of "
    "its dependencies (commit, Celery publish, delivery, claim); steps that became ready while "
    "every slot was running a step are left out and counted in waited_for_slot",
    "dispatch_carried": "dispatch of the steps a parent's process carried on to, claimed in "
    "the parent's finish (on PostgreSQL in the finish's own statement, so 0 by construction)",
    "dispatch_through_queue": "dispatch of the other steps: the parent's commit, the enqueue, "
    "Celery's delivery to a free pool process and the claim",
    "dispatch_ready_to_queued": "the part of dispatch inside the last parent's finishing "
    "transaction: its finished_at to the child's step.queued event",
    "dispatch_queued_to_started": "the rest: the step.queued event to the child's started_at "
    "(commit, broadcasts, enqueue, Celery delivery, claim)",
    "first_dispatch": "per root step: its started_at minus the approval",
    "critical_path": "the chain of steps that set the makespan (from the step that ended last, "
    "back through the dependency that ended last): its steps' durations over the latency "
    "(in_steps_ms), the approval to its first start (first_ms), and the waits before the rest "
    "after their parent's end, split by how they were claimed: carried on by the parent's "
    "process inside its finish, or through the queue (a wait for a free slot included). The "
    "makespan is exactly the latency times steps plus these",
    "steps": "each step as [step_id, started_ms, finished_ms, carried], milliseconds after the "
    "approval, in the order they started (carried: claimed in its parent's finish)",
    "model_call": "ModelCall.latency_ms: the simulated latency plus what the provider does "
    "around it (live text flushed to Redis and the watchers every 0.1 s)",
    "cpu": "CPU seconds used during the run (approval to end) by the benchmark's own processes "
    "(this one, Redis, the worker and its pool, the ASGI servers) and by everything else on "
    "the machine; busy_fraction is the share of all cores busy; worker_ms_per_step is the "
    "worker's CPU (pool included) per step, database_ms_per_step the database server's (a "
    "PostgreSQL server on this machine, counted as the process 'database': its backends and "
    "its own workers, including what the backends of other connections used meanwhile), "
    "daphne_us_per_message the ASGI servers' per "
    "message delivered (an event or a live text; an event in a batch frame counts as one)",
    "websocket": "per event message per client: arrival time at the client minus the event's "
    "'at' (RunEvent.created_at, stamped before the commit and the Redis publish); live-text "
    "messages carry no time and are not counted. The clients do as the run page with no step "
    "open: they ask for batches (`&batch=1`: events that reach the ASGI server together come "
    "in one frame, frames_per_client) and follow no step's live text (`&text=`)",
    "floor": "the same DAG as bare Celery tasks on the same Redis and worker settings (the run "
    "with the median makespan of --repeat); worker_ms_per_step is its worker's CPU (pool "
    "included) per step: what Celery itself costs a step. With --floor-cpu-ms, cpu_sweep: "
    "the floor again with its tasks spending cpu_ms of CPU besides (bench.cpu_budget), and "
    "ratio_per_cpu_ms: the slope of its ratio over that CPU, what a ms of CPU a step costs "
    "the makespan on this machine",
    "cpu_budget": "with --floor-cpu-ms: agentsite's CPU a step by process (cpu.by_process_s "
    "over the steps; 'benchmark' is this process with the watchers' clients), how far its sum "
    "is over the floor's worker, and the floor's ratio at that much more CPU a step "
    "(floor_ratio_at_that_cpu): what agentsite's ratio would be if its CPU were all it paid",
}


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--latency", type=float, default=0.2, help="seconds per model call (default 0.2)"
    )
    parser.add_argument(
        "--shapes",
        default=",".join(shapes.SHAPES),
        help="comma-separated, of chain, fanout, diamond, layered (default: all)",
    )
    parser.add_argument("--sizes", default="16,32,64", help="plan steps per shape, comma-separated")
    parser.add_argument(
        "--width", type=int, default=8, help="widest layer of the layered DAGs (default 8)"
    )
    parser.add_argument(
        "--clients",
        type=int,
        default=50,
        help="WebSocket clients watching each run (with --throughput: in all, dealt out over "
        "the runs)",
    )
    parser.add_argument(
        "--slots",
        type=int,
        default=0,
        help=f"worker slots; default: the widest DAG's width, at most {MAX_DEFAULT_SLOTS}",
    )
    parser.add_argument("--pool", choices=["prefork", "threads", "solo"], default="prefork")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="Celery worker processes the slots are dealt out over, each with a consumer of "
        "its own (default 1; with --pool solo, one per slot)",
    )
    parser.add_argument(
        "--asgi",
        choices=["daphne", "uvicorn"],
        default="daphne",
        help="the ASGI server the watchers talk to (uvicorn only where it is installed)",
    )
    parser.add_argument(
        "--asgi-processes",
        type=int,
        default=1,
        help="ASGI server processes, each on a port of its own; watchers are dealt out over them",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the layered DAGs")
    parser.add_argument(
        "--warm-up-steps",
        type=int,
        default=WARM_UP_STEPS,
        help="steps a worker process runs in the warm-up before anything is measured "
        "(1: the warm-up before 2026-12-07, which left PostgreSQL's plans to the measured runs)",
    )
    parser.add_argument(
        "--worker-nice",
        type=int,
        default=0,
        help="run the worker at this nice value (the ASGI server keeps 0): does giving the "
        "watchers' server the CPU first help them, and what does it cost the steps?",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per shape and size; the table shows the one with the median makespan",
    )
    parser.add_argument(
        "--keep-runs", action="store_true", help="keep the benchmark's runs in the database"
    )
    parser.add_argument(
        "--throughput",
        type=int,
        default=0,
        metavar="RUNS",
        help="instead of the shapes: approve this many small runs at once and report steps per "
        "second and CPU per step",
    )
    parser.add_argument(
        "--statement-times",
        action="store_true",
        help="time every database statement and commit of the worker's pool processes and "
        "report the slowest kinds per shape (adds a little work to each statement)",
    )
    parser.add_argument(
        "--db-delay-ms",
        type=float,
        default=0,
        metavar="MS",
        help="every round trip of the worker's pool processes to PostgreSQL waits this long "
        "first, as a database on another machine would add (0.2 to 0.5 ms on a LAN); the floor "
        "is left as it is",
    )
    parser.add_argument(
        "--floor-cpu-ms",
        default="",
        metavar="MS,MS,...",
        help="run the floor again at each of these, its tasks spending that many ms of CPU "
        "besides (two fifths before the sleep, the rest after, as a step's claim and finish): "
        "what the makespan pays for each ms of CPU a step costs the machine, to read "
        "agentsite's CPU a step against",
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="skip the raw-Celery floor (the same DAGs as bare Celery tasks, run afterwards)",
    )
    args = parser.parse_args(argv)
    args.shapes = [name.strip() for name in args.shapes.split(",") if name.strip()]
    unknown = [name for name in args.shapes if name not in shapes.SHAPES]
    if unknown:
        parser.error(f"unknown shape {', '.join(unknown)}; use {', '.join(shapes.SHAPES)}")
    try:
        args.sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    except ValueError:
        parser.error(f"--sizes takes whole numbers separated by commas, not {args.sizes!r}")
    if not args.sizes or min(args.sizes) < 3:
        parser.error("every size must be at least 3 steps")
    if args.latency < 0 or args.clients < 0 or args.slots < 0:
        parser.error("--latency, --clients and --slots cannot be negative")
    if args.width < 1 or args.repeat < 1:
        parser.error("--width and --repeat must be at least 1")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.db_delay_ms < 0:
        parser.error("--db-delay-ms cannot be negative")
    try:
        args.floor_cpu_ms = [float(ms) for ms in args.floor_cpu_ms.split(",") if ms.strip()]
    except ValueError:
        parser.error(
            f"--floor-cpu-ms takes milliseconds separated by commas, not {args.floor_cpu_ms!r}"
        )
    if any(ms < 0 for ms in args.floor_cpu_ms) or (args.floor_cpu_ms and args.no_floor):
        parser.error("--floor-cpu-ms takes milliseconds of 0 or more, and the floor")
    if args.db_delay_ms and not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        parser.error("--db-delay-ms puts PostgreSQL farther away: set DATABASE_URL=postgres://…")
    return args


def django_setup() -> None:
    """Settings from the environment, as for `make run`, but in a folder of the bench's own."""
    var_dir = Path(os.environ.get("BENCH_VAR_DIR", BASE_DIR / "var" / "bench"))
    os.environ["AGENTSITE_VAR_DIR"] = str(var_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "agentsite.settings"
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        from bench.database import ensure_database

        ensure_database(url)  # a server that does not answer fails at migrate, with its reason
    import django

    django.setup()
    logging.getLogger().setLevel(logging.WARNING)  # this process only; the children log as usual
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    plans = [
        shapes.build(name, size, seed=args.seed, width=args.width)
        for name in args.shapes
        for size in args.sizes
    ]
    widest = max(shapes.width_of(plan.with_synthesis()) for plan in plans)
    slots = args.slots or min(widest, MAX_DEFAULT_SLOTS)
    if args.pool == "solo":
        args.workers = slots  # a solo worker runs one task at a time
    args.workers = min(args.workers, slots)

    load_before = [round(value, 2) for value in os.getloadavg()]
    django_setup()
    from django.conf import settings

    from bench import scheduler
    from bench.websocket import Watchers
    from planner_ui.stores import statement_times

    _say(
        f"Starting Redis, {args.workers} Celery worker(s) ({args.pool}, {slots} slots) and "
        "Daphne; logs in "
        f"{settings.VAR_DIR / 'logs'} ..."
    )
    started = time.monotonic()
    timings = settings.VAR_DIR / "statement-times" if args.statement_times else None
    if timings is not None:
        shutil.rmtree(timings, ignore_errors=True)
    stack = scheduler.stack_start(
        latency_s=args.latency,
        slots=slots,
        pool=args.pool,
        log_dir=settings.VAR_DIR / "logs",
        asgi=args.asgi,
        asgi_processes=args.asgi_processes,
        worker_nice=args.worker_nice,
        workers=args.workers,
        statement_times=timings,
        db_delay_ms=args.db_delay_ms,
    )
    watchers = None
    statements: dict[str, list[dict[str, Any]]] = {}
    run_ids: list[int] = []
    results: list[dict[str, Any]] = []
    try:
        owner = scheduler.bench_user()
        watchers = Watchers(scheduler.HOST, stack.ports, scheduler.session_cookie(owner))

        def measure(shape: shapes.Shape, clients: int) -> dict[str, Any]:
            figures = scheduler.run_measure(
                shape,
                owner=owner,
                stack=stack,
                latency_s=args.latency,
                slots=slots,
                watchers=watchers,
                clients=clients,
            )
            run_ids.append(figures["run_id"])
            return figures

        # A warm-up, not reported: the worker's processes open their database connections and
        # import the executor's modules on their first task, and PostgreSQL plans each prepared
        # statement of a connection afresh at its first five runs before it keeps one plan (the
        # plan cache's rule): with one warm-up step a process, about half of the measured runs'
        # finishes were planned (pg_stat_statements: 95 plans for 209 finishes), where a worker
        # in service plans them once in its connection's 500 to 1,000 tasks. WARM_UP_STEPS a
        # process by default, with room for an uneven share.
        warm_up = max(3, args.warm_up_steps * slots + 1)
        measure(shapes.build("fanout", warm_up, seed=args.seed, width=args.width), 0)
        if args.throughput:
            return _throughput(args, owner, stack, slots, run_ids, started, watchers)
        for plan in plans:
            if timings is not None:
                statement_times.clear(timings)
            for repeat in range(1, args.repeat + 1):
                figures = measure(plan, args.clients)
                results.append({"repeat": repeat, **figures})
                _say(_progress_line(figures))
            if timings is not None:
                slowest = statement_times.summary(timings)
                statements[f"{plan.name}-{plan.size}"] = slowest
                _say(_statements_lines(plan, slowest))
        if not args.no_floor:
            watchers.shutdown()
            watchers = None
            floors = _floor(plans, stack, args, slots)
    finally:
        if watchers is not None:
            watchers.shutdown()
        stack.stop()
        if not args.keep_runs and run_ids:
            scheduler.runs_delete(run_ids)

    summary = _medians(results)
    if not args.no_floor:
        from bench import cpu_budget

        for run in summary:
            run["floor"] = floors[(run["shape"], run["plan_steps"])]
            if (found := cpu_budget.budget(run, run["steps_run"])) is not None:
                run["cpu_budget"] = found
                _say(cpu_budget.budget_line(run))
    report = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "settings": {
            "latency_s": args.latency,
            "clients": args.clients,
            "slots": slots,
            "pool": args.pool,
            "workers": args.workers,
            "width": args.width,
            "seed": args.seed,
            "repeat": args.repeat,
            "warm_up_steps": args.warm_up_steps,
            "asgi": f"{args.asgi} x {args.asgi_processes}",
            "worker_nice": args.worker_nice,
            "database": _database(),
            "db_delay_ms": args.db_delay_ms,
            "redis": stack.redis,
        },
        "load_average_before": load_before,
        "definitions": DEFINITIONS,
        # One row per shape and size: of its repeats, the one with the median makespan.
        "summary": summary,
        "runs": results,
        "targets": targets(summary, args.latency),
        "wall_s": round(time.monotonic() - started, 1),
    }
    if statements:
        report["statement_times"] = statements
    path = _write(report)
    print(table(report))
    print(f"\nWritten to {path.relative_to(BASE_DIR)} and bench/results/latest.json")
    return 0


def _throughput(
    args: argparse.Namespace,
    owner: Any,
    stack: Any,
    slots: int,
    run_ids: list,
    started: float,
    watchers: Any,
) -> int:

    from bench.throughput import throughput_measure, throughput_table

    _say(
        f"Throughput: {args.throughput} runs approved at once, {args.clients} WebSocket clients "
        "dealt out over them ..."
    )
    figures = throughput_measure(
        args.throughput,
        owner=owner,
        stack=stack,
        size=3,
        timeout_s=600.0,
        slots=slots,
        latency_s=args.latency,
        watchers=watchers,
        clients=args.clients,
    )
    run_ids += figures.pop("run_ids")
    report = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "settings": {
            "latency_s": args.latency,
            "clients": args.clients,
            "slots": slots,
            "pool": args.pool,
            "workers": args.workers,
            "database": _database(),
            "db_delay_ms": args.db_delay_ms,
            "redis": stack.redis,
        },
        "throughput": figures,
        "wall_s": round(time.monotonic() - started, 1),
    }
    path = _write(report, latest=False)
    print(throughput_table(figures, _database(), slots))
    print(f"\nWritten to {path.relative_to(BASE_DIR)}")
    return 0


def _floor(plans: list, stack: Any, args: argparse.Namespace, slots: int) -> dict:
    """The same DAGs as bare Celery tasks on the same Redis, agentsite's processes stopped;
    with --floor-cpu-ms, again at each CPU a step given, and what a ms of it costs."""
    from bench import cpu_budget

    _say("The raw-Celery floor: the same DAGs as bare tasks on the same Redis ...")
    stack.stop(keep_redis=True)
    stack.start_floor(slots=slots, pool=args.pool, workers=args.workers)
    workers = {role: pid for role, pid in stack.pids.items() if role.split("-")[0] == "floor"}
    floors = {}
    for plan in plans:
        chosen = _floor_median(plan, workers, args, slots, cpu_ms=0.0)
        _say(
            f"  floor, {plan.name} of {plan.size}: makespan {chosen['makespan_s']:.2f} s, "
            f"worker CPU {chosen['worker_ms_per_step']} ms a step"
        )
        if args.floor_cpu_ms:
            sweep = [
                {"cpu_ms": ms, **_floor_median(plan, workers, args, slots, cpu_ms=ms)}
                for ms in args.floor_cpu_ms
            ]
            chosen["cpu_sweep"] = [
                {key: run[key] for key in ("cpu_ms", "makespan_over_ideal", "worker_ms_per_step")}
                for run in sweep
            ]
            chosen["ratio_per_cpu_ms"] = cpu_budget.slope(
                [(0.0, chosen["makespan_over_ideal"])]
                + [(run["cpu_ms"], run["makespan_over_ideal"]) for run in sweep]
            )
            _say(cpu_budget.sweep_line(plan.name, plan.size, chosen))
        floors[(plan.name, plan.size)] = chosen
    return floors


def _floor_median(
    plan: Any, workers: dict[str, int], args: argparse.Namespace, slots: int, *, cpu_ms: float
) -> dict[str, Any]:
    """Of --repeat runs of `plan` on the floor, the one with the median makespan."""
    from django.conf import settings

    from bench import cpu_budget
    from bench.cpu import CpuWindow, ms_per_step
    from bench.floor import floor_run

    steps = len(plan.with_synthesis())
    timeout = 60 + 20 * steps * max(args.latency, 0.1)
    runs = []
    for _ in range(args.repeat):
        cpu = CpuWindow(workers)
        cpu.start()
        run = floor_run(
            plan,
            latency_s=args.latency,
            slots=slots,
            redis_url=settings.REDIS_URL,
            timeout_s=timeout,
            cpu_s=cpu_budget.split(cpu_ms),
        )
        used = cpu.stop()["by_process_s"]
        # Celery's own cost of a task, beside which agentsite's worker CPU a step is read.
        run["worker_ms_per_step"] = ms_per_step(sum(used.values()) if used else None, steps)
        runs.append(run)
    return sorted(runs, key=lambda run: run["makespan_s"])[(len(runs) - 1) // 2]


def _medians(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Of each shape and size's repeats, the run whose makespan is the median (the lower one)."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["shape"], run["plan_steps"]), []).append(run)
    chosen = []
    for repeats in groups.values():
        ordered = sorted(repeats, key=lambda run: run["makespan_s"])
        chosen.append(ordered[(len(ordered) - 1) // 2])
    return chosen


def _commit(base: Path = BASE_DIR) -> str | None:
    """The code measured: HEAD, marked when the work tree has changes. The results folder does
    not count: every invocation rewrites latest.json, which would mark all but the first."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=base, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":(exclude)bench/results",
            ],
            cwd=base,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{head}+changes" if dirty else head


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _statements_lines(plan: shapes.Shape, rows: list[dict[str, Any]]) -> str:
    """The worker's slowest kinds of statement over a shape's runs, one line each."""
    lines = [f"  statements of {plan.name} of {plan.size}, by total time (ms: n, p50, p90, max):"]
    for row in rows[:8]:
        lines.append(
            f"    {row['count']:5d} {row['p50_ms']:7.2f} {row['p90_ms']:7.2f} "
            f"{row['max_ms']:8.2f}  {row['statement']}"
        )
    return "\n".join(lines)


def _progress_line(figures: dict[str, Any]) -> str:
    return (
        f"  {figures['shape']} of {figures['plan_steps']}: makespan {figures['makespan_s']:.2f} s, "
        f"ideal {figures['ideal_makespan_s']:.2f} s; {_held(figures['websocket'])}; "
        f"{_waits(figures['websocket'])}; {_dispatch(figures)}; {_path(figures)}"
    )


def _path(figures: dict[str, Any]) -> str:
    path = figures["critical_path"]
    return (
        f"makespan's chain of {path['steps']} steps: {path['in_steps_ms']} ms in them over the "
        f"latency, {path['first_ms']} to start, {path['carried_ms']} after {path['carried']} "
        f"carried on, {path['queued_ms']} after {path['queued']} through the queue"
    )


def _dispatch(figures: dict[str, Any]) -> str:
    return (
        f"dispatch p50 {figures['dispatch']['p50_ms']} ms (carried on "
        f"{figures['dispatch_carried']['count']}: {figures['dispatch_carried']['p50_ms']}, "
        f"through the queue {figures['dispatch_through_queue']['count']}: "
        f"{figures['dispatch_through_queue']['p50_ms']}); queued to claiming "
        f"{figures['dispatch_queued_to_claiming']['p50_ms']}, claim's wait for the write lock "
        f"{figures['dispatch_claim_wait']['p50_ms']}"
    )


def _waits(websocket: dict[str, Any]) -> str:
    published = websocket["published"]["p50_ms"]
    if websocket.get("p50_ms") is None:  # no watchers
        return f"events published {published} ms after their time (p50)"
    return f"events published {published}, delivered {websocket['p50_ms']} ms after (p50)"


def _held(websocket: dict[str, Any]) -> str:
    order = websocket["published_out_of_order"]
    hold = order["hold"]
    if not order["held"]:
        return f"all {order['events']} events published in order"
    return (
        f"{order['held']} of {order['events']} events published before an earlier one, "
        f"held {hold['p50_ms']} / {hold['max_ms']} ms (p50 / max)"
    )


def _write(report: dict[str, Any], *, latest: bool = True) -> Path:
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    text = json.dumps(report, indent=2) + "\n"
    path = RESULTS_DIR / f"{stamp}.json"
    path.write_text(text)
    if latest:
        (RESULTS_DIR / "latest.json").write_text(text)
    return path


def _database() -> str:
    """The database, and where its settings differ from the defaults: commits that do not wait
    for the disk (AGENTSITE_DB_ASYNC_COMMIT), statements planned at every call
    (AGENTSITE_DB_PREPARED=false)."""
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql":
        return connection.vendor
    unusual = [
        *(["async commit"] if settings.AGENTSITE_DB_ASYNC_COMMIT else []),
        *(["statements not prepared"] if not settings.AGENTSITE_DB_PREPARED else []),
    ]
    return f"postgresql ({', '.join(unusual)})" if unusual else "postgresql"


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as exc:
        print(f"make bench: {exc}", file=sys.stderr)
        sys.exit(1)
