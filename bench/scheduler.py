"""The stack under test and one measured run on it.

The stack is the real one: Redis (the embedded one unless REDIS_URL names another), one Celery
worker process with as many slots as asked, and Daphne. A run is created here with a scripted
plan, as the planner would have stored it, and approved through `run_approve_plan`; from then on
the app's own code dispatches, executes and broadcasts, and this module only watches.

Needs Django set up (see bench.__main__).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import STDOUT, Popen
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.test import Client

from agentsite import embedded
from planner_ui.core.plan import MAX_STEPS, ROLES
from planner_ui.core.status import RunStatus
from planner_ui.core.validation import validate_plan
from planner_ui.models import ModelCall, PlanVersion, Run
from planner_ui.services.events import event_append
from planner_ui.services.plans import materialize_steps
from planner_ui.services.providers import routes_for_run
from planner_ui.services.runs import run_approve_plan
from planner_ui.tools import tool_names

from . import metrics, shapes
from .cpu import CpuWindow, database_server_pid, ms_per_step
from .publish_order import PublishOrder
from .websocket import Watchers

HOST = "127.0.0.1"
BENCH_USERNAME = "bench"
WORKER_START_TIMEOUT_S = 90.0
# Every part of a bench run is served by the offline model, whatever the settings route to.
OFFLINE_ROUTES = {
    "planner": "offline",
    "executor": "offline",
    "synthesizer": "offline",
    **{f"executor:{role}": "offline" for role in ROLES},
}


@dataclass
class Stack:
    ports: list[int]
    slots: int
    pool: str
    log_dir: Path
    processes: list[Popen] = field(default_factory=list)
    pids: dict[str, int] = field(default_factory=dict)  # by role, for the CPU figures
    redis: str = ""

    def add(self, role: str, process: Popen) -> None:
        self.processes.append(process)
        self.pids[role] = process.pid

    def stop(self, *, keep_redis: bool = False) -> None:
        """Stop what the stack started (its Redis last, or not at all with `keep_redis`)."""
        redis_pid = self.pids.get("redis") if keep_redis else None
        stopping = [p for p in self.processes if p.pid != redis_pid]
        embedded.stop_processes(stopping)
        self.processes = [p for p in self.processes if p.pid == redis_pid]

    def start_floor(self, *, slots: int, pool: str, workers: int = 1) -> None:
        """The raw-Celery floor's workers (bench.floor), on the same Redis as agentsite's."""
        from bench.floor import QUEUE

        self.start_workers(
            "floor",
            f"bench-floor-{os.getpid()}",
            slots=slots,
            workers=workers,
            env={"REDIS_URL": settings.REDIS_URL, "DJANGO_SETTINGS_MODULE": ""},
            pool=pool,
            app="bench.floor",
            queue=QUEUE,
        )

    def start_workers(
        self, role: str, name: str, *, slots: int, workers: int, **start: Any
    ) -> None:
        """`workers` Celery workers with `slots` slots between them, named "<name>-<n>" (the
        CPU figures know them by `role`), once each answers; `start` goes to start_worker."""
        for number, concurrency in enumerate(worker_slots(slots, workers), start=1):
            self.add(
                role if number == 1 else f"{role}-{number}",
                embedded.start_worker(
                    concurrency=concurrency,
                    hostname=f"{name}-{number}@%h",
                    log_path=self.log_dir / f"{role}-{number}.log",
                    **start,
                ),
            )
        for number in range(1, workers + 1):
            embedded.wait_for_worker(f"{name}-{number}@", timeout=WORKER_START_TIMEOUT_S)


def worker_slots(slots: int, workers: int) -> list[int]:
    """`slots` dealt out over `workers` worker processes, as evenly as they go."""
    return [slots // workers + (1 if number < slots % workers else 0) for number in range(workers)]


def stack_start(
    *,
    latency_s: float,
    slots: int,
    pool: str,
    log_dir: Path,
    asgi: str = "daphne",
    asgi_processes: int = 1,
    worker_nice: int = 0,
    workers: int = 1,
    statement_times: Path | None = None,
    db_delay_ms: float = 0,
) -> Stack:
    """Redis if the embedded one is wanted, a worker with `slots` slots, and `asgi_processes`
    ASGI servers (Daphne, or uvicorn where it is installed), each on a port of its own."""
    log_dir.mkdir(parents=True, exist_ok=True)
    ports = [embedded.free_port() for _ in range(asgi_processes)]
    stack = Stack(ports=ports, slots=slots, pool=pool, log_dir=log_dir)
    try:
        if settings.REDIS_IS_EMBEDDED:
            if embedded.redis_ping(settings.REDIS_URL):
                raise RuntimeError(
                    f"A Redis already answers on {settings.EMBEDDED_REDIS_SOCKET}: is another "
                    "`make bench` running? Wait for it, or set BENCH_VAR_DIR to another folder."
                )
            stack.add(
                "redis",
                embedded.start_redis(
                    settings.EMBEDDED_REDIS_SOCKET, log_path=log_dir / "redis.log"
                ),
            )
            stack.redis = "embedded"
        elif embedded.redis_ping(settings.REDIS_URL):
            stack.redis = "REDIS_URL"
        else:
            raise RuntimeError("REDIS_URL does not answer; start that Redis or unset REDIS_URL.")
        env = {
            "DJANGO_SETTINGS_MODULE": "agentsite.settings",
            "AGENTSITE_VAR_DIR": str(settings.VAR_DIR),
            "REDIS_URL": settings.REDIS_URL,
            "AGENTSITE_OFFLINE_LATENCY_S": str(latency_s),
        }
        if statement_times is not None:  # the workers' pool processes time their statements
            env["AGENTSITE_STATEMENT_TIMES"] = str(statement_times)
        if db_delay_ms:  # and wait as if the database were on another machine
            env["AGENTSITE_STATEMENT_DELAY_MS"] = str(db_delay_ms)
        # The ASGI servers first: they start while the workers do.
        for number, port in enumerate(ports, start=1):
            stack.add(
                f"asgi-{number}", _asgi_start(asgi, env, port, log_dir / f"asgi-{number}.log")
            )
        worker_name = f"bench-{os.getpid()}"
        stack.start_workers(
            "worker",
            worker_name,
            slots=slots,
            workers=workers,
            env=env,
            pool=pool,
            nice=worker_nice,
        )
        refuse_other_workers(worker_name)
        for port in ports:
            embedded.wait_for_http(f"http://{HOST}:{port}/", timeout=60.0)
    except BaseException:
        stack.stop()
        raise
    return stack


def _asgi_start(kind: str, env: dict[str, str], port: int, log_path: Path) -> Popen:
    if kind == "daphne":
        return embedded.start_daphne(env=env, host=HOST, port=port, log_path=log_path)
    if importlib.util.find_spec("uvicorn") is None:
        raise RuntimeError("--asgi uvicorn needs uvicorn and websockets: pip install them first.")
    command = [
        sys.executable, "-m", "uvicorn", "agentsite.asgi:application",
        "--host", HOST, "--port", str(port), "--ws", "websockets", "--log-level", "warning",
    ]  # fmt: skip
    log = open(log_path, "wb")  # noqa: SIM115 - the child keeps its own copy
    try:
        return Popen(command, cwd=embedded.BASE_DIR, env={**os.environ, **env}, stdout=log,
                     stderr=STDOUT, start_new_session=True)  # fmt: skip
    finally:
        log.close()


def refuse_other_workers(own_name: str) -> None:
    """Another worker on this queue would take some of the steps and skew every figure."""
    from agentsite.celery import app

    replies = app.control.ping(timeout=1.0)
    others = [name for reply in replies for name in reply if not name.startswith(own_name + "-")]
    if others:
        raise RuntimeError(
            f"Other Celery workers listen on this Redis ({', '.join(others)}); the benchmark "
            "needs the queue to itself. Stop them, or leave REDIS_URL unset to use a private "
            "embedded Redis."
        )


def bench_user() -> AbstractBaseUser:
    user, created = get_user_model().objects.get_or_create(username=BENCH_USERNAME)
    if created:
        user.set_unusable_password()
        user.save()
    return user


def session_cookie(user: AbstractBaseUser) -> str:
    """A logged-in session for the WebSocket clients, as a Cookie header value."""
    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}"


def scripted_run_create(owner: AbstractBaseUser, shape: shapes.Shape) -> Run:
    """A run awaiting plan approval with `shape` as its plan, stored as run_plan stores one.

    The plan is validated by the app's own rules, except that it may be longer than the
    planner's limit of MAX_STEPS steps: the scheduler has no such limit.
    """
    plan = validate_plan(
        shape.plan(), known_tools=tool_names(), max_steps=max(MAX_STEPS, shape.size)
    )
    routes = routes_for_run(OFFLINE_ROUTES)
    with transaction.atomic():
        run = Run.objects.create(
            owner=owner,
            task=f"Benchmark: {shape.name} of {shape.size} steps.",
            routes={part: route.label for part, route in routes.items()},
            executor_model=routes["executor"].label,
        )
        event_append(run.pk, "run.status", {"status": run.status})
        version = PlanVersion.objects.create(
            run=run,
            number=1,
            author=PlanVersion.Author.PERSON,
            plan=plan.model_dump(),
            note="scripted by make bench",
        )
        materialize_steps(run, plan)
        run.move_to(RunStatus.AWAITING_PLAN_APPROVAL)
        run.save()
        event_append(
            run.pk,
            "plan.version",
            {"number": version.number, "author": version.author, "steps": len(plan.steps)},
        )
        event_append(run.pk, "run.status", {"status": run.status})
    return run


def run_wait(run_id: int, timeout: float) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if run.is_finished:
            return run
        time.sleep(0.1)
    raise RuntimeError(f"Run {run_id} did not finish within {timeout:g} s; see the worker log.")


def run_measure(
    shape: shapes.Shape,
    *,
    owner: AbstractBaseUser,
    stack: Stack,
    latency_s: float,
    slots: int,
    watchers: Watchers | None,
    clients: int,
) -> dict[str, Any]:
    """Run `shape` to its end with `clients` watching, and compute its figures."""
    deps = shape.with_synthesis()
    ideal_units = shapes.ideal_makespan_steps(deps, slots)
    run = scripted_run_create(owner, shape)
    run.refresh_from_db()  # event_append counts last_event_seq in the database only
    if watchers is not None and clients:
        watchers.watch(run.pk, after=run.last_event_seq, count=clients)
    first_live_seq = run.last_event_seq + 1
    published = PublishOrder(run.pk)
    published.start()
    cpu = CpuWindow(cpu_roots(stack))
    cpu.start()
    run_approve_plan(run.pk)
    run = run_wait(run.pk, timeout=60 + 20 * ideal_units * max(latency_s, 0.1))
    cpu_used = cpu.stop()
    if run.status != RunStatus.SUCCEEDED:
        raise RuntimeError(f"Run {run.pk} ({shape.name} of {shape.size}) {run.status}: {run.error}")
    received: list[tuple[float, bytes]] = []
    delivered_all = True
    if watchers is not None and clients:
        delivered_all = watchers.wait_for_seq(run.last_event_seq, timeout=10.0)
        received = watchers.stop()
    publish_order = metrics.publish_holds(published.stop())
    publish_delays = metrics.publish_delays(published.published)

    started = list(run.events.filter(type="step.started"))
    carried = {event.step_id for event in started if event.payload.get("carried_from")}
    steps = [
        metrics.StepTiming(
            s.step_id,
            list(s.depends_on),
            s.started_at.timestamp(),
            s.finished_at.timestamp(),
            carried=s.step_id in carried,
        )
        for s in run.steps.all()
    ]
    approved_at = run.started_at.timestamp()
    makespan_s = max(s.finished_at for s in steps) - approved_at
    ideal_s = ideal_units * latency_s
    busy_s = sum(s.finished_at - s.started_at for s in steps)
    dispatch = metrics.dispatch_latencies(steps, approved_at, slots)
    step_durations = [s.finished_at - s.started_at for s in steps]
    queued_at = {
        event.step_id: event.created_at.timestamp()
        for event in run.events.filter(type="step.queued")
    }
    claim_waits = {
        event.step_id: event.payload["waited_ms"] / 1000
        for event in started
        if "waited_ms" in event.payload
    }
    phases = metrics.dispatch_phases(steps, queued_at, dispatch.waited_for_slot, claim_waits)
    model_call_s = [
        ms / 1000 for ms in ModelCall.objects.filter(run=run).values_list("latency_ms", flat=True)
    ]
    delivered = metrics.event_latencies(received)
    live_events = range(first_live_seq, run.last_event_seq + 1)
    expected = len(live_events) * clients
    return {
        "shape": shape.name,
        "plan_steps": shape.size,
        "steps_run": len(deps),
        "width": shapes.width_of(deps),
        "slots": slots,
        "critical_path_steps": shapes.critical_path_steps(deps),
        "ideal_makespan_steps": ideal_units,
        "run_id": run.pk,
        "makespan_s": round(makespan_s, 4),
        "ideal_makespan_s": round(ideal_s, 4),
        "makespan_over_ideal": round(makespan_s / ideal_s, 4) if ideal_s else None,
        "speedup": round(len(deps) * latency_s / makespan_s, 3),
        "ideal_speedup": round(len(deps) / ideal_units, 3),
        "mean_concurrency": round(busy_s / makespan_s, 3),
        "step_duration": metrics.summary_ms(step_durations),
        "step_overhead_p50_ms": round(
            (metrics.percentile(step_durations, 0.5) - latency_s) * 1000, 2
        ),
        "model_call": metrics.summary_ms(model_call_s),
        "dispatch": {
            **metrics.summary_ms(dispatch.after_parent_s),
            "waited_for_slot": len(dispatch.waited_for_slot),
        },
        "dispatch_carried": metrics.summary_ms(dispatch.carried_s),
        "dispatch_through_queue": metrics.summary_ms(dispatch.through_queue_s),
        "dispatch_ready_to_queued": metrics.summary_ms(phases.to_queued),
        "dispatch_queued_to_started": metrics.summary_ms(phases.to_started),
        # Of which: until the child's claim began (the commit, the enqueue, Celery's delivery
        # to a pool process), and the claim's wait for the database's write lock.
        "dispatch_queued_to_claiming": metrics.summary_ms(phases.to_claiming),
        "dispatch_claim_wait": metrics.summary_ms(phases.claim_waits),
        "first_dispatch": metrics.summary_ms(dispatch.after_approval_s),
        "critical_path": metrics.critical_path(steps, approved_at, latency_s).as_dict(),
        "steps": metrics.timeline(steps, approved_at),
        "cpu": {
            **cpu_used,
            **_cpu_shares(
                cpu_used, len(deps), len(delivered.event_delays_s) + delivered.text_messages
            ),
        },
        "websocket": {
            "clients": clients,
            # What the clients received, events in batches counted once each in "events".
            "frames_per_client": round(len(received) / clients) if clients else 0,
            "events": len(live_events),
            "text_messages_per_client": round(delivered.text_messages / clients) if clients else 0,
            **metrics.summary_ms(delivered.event_delays_s),
            "missing": expected - sum(delivered.copies_by_seq.get(seq, 0) for seq in live_events),
            "all_delivered_within_10s": delivered_all,
            # Published before an event with a lower number, and so held back by the consumer.
            "published_out_of_order": publish_order,
            # From the event's `at` to its arrival at a subscriber of Redis beside Daphne.
            "published": publish_delays,
            "by_type": {
                kind: metrics.summary_ms(delays)
                for kind, delays in sorted(delivered.delays_by_type.items())
            },
        },
    }


def cpu_roots(stack: Stack) -> dict[str, int]:
    """The processes whose CPU a run's figures name: this one, the stack's, and the database
    server where it runs on this machine (PostgreSQL; SQLite's work is the worker's)."""
    roots = {"benchmark": os.getpid(), **stack.pids}
    if (database := database_server_pid()) is not None:
        roots["database"] = database
    return roots


def _cpu_shares(cpu_used: dict[str, Any], steps: int, messages: int) -> dict[str, float | None]:
    """The worker's and the database server's CPU per step, and Daphne's per message it
    delivered (an event or a live text; an event in a batch frame counts as one)."""
    by_process = cpu_used.get("by_process_s") or {}
    worker = workers_cpu_s(by_process)
    servers = [used for name, used in by_process.items() if name.startswith("asgi-")]
    daphne = sum(servers) if servers else None
    return {
        "worker_ms_per_step": ms_per_step(worker, steps),
        "database_ms_per_step": ms_per_step(by_process.get("database"), steps),
        "daphne_us_per_message": (
            round(daphne * 1e6 / messages, 1) if daphne is not None and messages else None
        ),
    }


def workers_cpu_s(by_process: dict[str, float]) -> float | None:
    """The CPU seconds of agentsite's worker processes (pools included), or None if unknown."""
    used = [s for name, s in by_process.items() if name.split("-")[0] == "worker"]
    return sum(used) if used else None


def runs_delete(run_ids: list[int]) -> None:
    runs = Run.objects.filter(pk__in=run_ids)
    with transaction.atomic():
        runs.update(approved_plan=None)  # a protected reference to the run's own plan version
        runs.delete()
