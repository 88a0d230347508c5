"""The floor under agentsite: the same DAG run by bare Celery tasks on the same Redis.

Each task sleeps the model call's latency, stamps its start and end in Redis, counts its
dependents down (DECR) and enqueues those that reach zero: no database, no events, no watchers.
What agentsite takes above this is its own overhead; what this takes above the ideal is the
stack's (Celery, Redis, the machine).

The worker runs this module as its Celery app (`celery -A bench.floor worker -Q bench-floor`),
with REDIS_URL in its environment; the benchmark drives it with `floor_run`.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis
from celery import Celery

from bench import cpu_budget, metrics, shapes

QUEUE = "bench-floor"


def _kombu_url(redis_url: str) -> str:
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url[len("unix://") :]
    return redis_url


REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
# The same settings as agentsite's workers (agentsite/settings.py, CELERY_*), so the comparison
# is about what the tasks do, not how Celery is set up.
app = Celery("bench_floor", broker=_kombu_url(REDIS_URL))
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_ignore_result=True,
    task_default_queue=QUEUE,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)

_client: redis.Redis | None = None


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(REDIS_URL)
    return _client


@app.task(name="bench.floor.step")
def floor_step(
    key: str, step_id: str, latency_s: float, cpu_s: tuple[float, float] = (0, 0)
) -> None:
    client = _redis()
    client.hset(f"{key}:start", step_id, time.time())
    cpu_budget.spin(cpu_s[0])
    time.sleep(latency_s)
    cpu_budget.spin(cpu_s[1])
    client.hset(f"{key}:end", step_id, time.time())
    for child in json.loads(client.hget(f"{key}:dependents", step_id) or b"[]"):
        if client.decr(f"{key}:waiting:{child}") == 0:
            floor_step.apply_async(args=(key, child, latency_s, cpu_s), queue=QUEUE)


def floor_run(
    shape: shapes.Shape,
    *,
    latency_s: float,
    slots: int,
    redis_url: str,
    timeout_s: float,
    cpu_s: tuple[float, float] = (0, 0),
) -> dict[str, Any]:
    """Run `shape` (synthesis included) on the floor's worker; its makespan and dispatch."""
    app.conf.broker_url = _kombu_url(redis_url)  # this process may not have REDIS_URL set
    client = redis.Redis.from_url(redis_url)
    deps = shape.with_synthesis()
    key = f"bench-floor:{uuid.uuid4().hex}"
    dependents = {step: [c for c, parents in deps.items() if step in parents] for step in deps}
    pipe = client.pipeline()
    for step, parents in deps.items():
        pipe.hset(f"{key}:dependents", step, json.dumps(dependents[step]))
        if parents:
            pipe.set(f"{key}:waiting:{step}", len(parents))
    pipe.execute()
    started = time.time()
    for step, parents in deps.items():
        if not parents:
            floor_step.apply_async(args=(key, step, latency_s, cpu_s), queue=QUEUE)
    ends = _wait(lambda: client.hgetall(f"{key}:end"), len(deps), timeout_s)
    starts = client.hgetall(f"{key}:start")
    client.delete(
        f"{key}:start", f"{key}:end", f"{key}:dependents", *(f"{key}:waiting:{s}" for s in deps)
    )
    steps = [
        metrics.StepTiming(
            step, list(deps[step]), float(starts[step.encode()]), float(ends[step.encode()])
        )
        for step in deps
    ]
    makespan = max(s.finished_at for s in steps) - started
    ideal = shapes.ideal_makespan_steps(deps, slots) * latency_s
    dispatch = metrics.dispatch_latencies(steps, started, slots)
    return {
        "shape": shape.name,
        "plan_steps": shape.size,
        "makespan_s": round(makespan, 4),
        "ideal_makespan_s": round(ideal, 4),
        "makespan_over_ideal": round(makespan / ideal, 4) if ideal else None,
        "dispatch": metrics.summary_ms(dispatch.after_parent_s),
    }


def _wait(read: Callable[[], dict], count: int, timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = read()
        if len(found) >= count:
            return found
        time.sleep(0.02)
    raise RuntimeError(f"the floor's worker finished {len(read())} of {count} steps in time")
