"""`make bench-watchers`: what forwarding events to a run's watchers costs the ASGI server alone.

No worker runs a step: `--events` events of one run are published straight to its group, in
bursts of `--burst` (one Redis round trip each, as a step's transaction publishes its events),
to `--clients` WebSocket clients of one Daphne. It prints Daphne's CPU per event delivered
(the full benchmark's `daphne_us_per_message`, without the steps competing for the cores) and
how long after its publishing each event reached the clients. The clients read a burst in one
frame, as the run page does (`&batch=1`); `--per-event` asks for a frame per event.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from bench.__main__ import django_setup
from bench.metrics import messages_of


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.watchers", description=__doc__)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--events", type=int, default=800)
    parser.add_argument("--burst", type=int, default=8, help="events per publish")
    parser.add_argument("--gap", type=float, default=0.02, help="seconds between bursts")
    parser.add_argument("--per-event", action="store_true", help="a frame per event")
    args = parser.parse_args(argv)

    django_setup()
    from django.conf import settings

    from bench import scheduler, shapes
    from bench.cpu import CpuWindow
    from bench.websocket import Watchers
    from planner_ui.services.broadcast import group_publish
    from planner_ui.services.events import run_group

    stack = scheduler.stack_start(
        latency_s=0.2, slots=1, pool="prefork", log_dir=settings.VAR_DIR / "logs"
    )
    run_id = None
    try:
        owner = scheduler.bench_user()
        watchers = Watchers(
            scheduler.HOST,
            stack.ports,
            scheduler.session_cookie(owner),
            batch=not args.per_event,
        )
        run = scheduler.scripted_run_create(owner, shapes.build("chain", 3, seed=1, width=8))
        run_id = run.pk
        run.refresh_from_db()
        first = run.last_event_seq + 1
        watchers.watch(run.pk, after=run.last_event_seq, count=args.clients)
        cpu = CpuWindow({"asgi": stack.pids["asgi-1"]})
        published: dict[int, float] = {}
        seq = first - 1
        cpu.start()
        while seq < first - 1 + args.events:
            burst = []
            for _ in range(min(args.burst, first - 1 + args.events - seq)):
                seq += 1
                event = {"seq": seq, "type": "step.succeeded", "step_id": "s01",
                         "payload": {"output": "x" * 200}, "created_at": ""}  # fmt: skip
                message = json.dumps({"type": "event", "event": event})
                burst.append(
                    (run_group(run.pk), {"type": "run.event", "seq": seq, "json": message})
                )
            now = time.time()
            group_publish(burst)
            published.update({message["seq"]: now for _, message in burst})
            time.sleep(args.gap)
        delivered_all = watchers.wait_for_seq(seq, timeout=30.0)
        used = cpu.stop()
        received = watchers.stop()
        watchers.shutdown()
    finally:
        stack.stop()
        if run_id is not None:
            scheduler.runs_delete([run_id])

    delays = []
    for arrived, raw in received:
        for message in messages_of(raw):
            if message.get("type") == "event" and message["event"]["seq"] in published:
                delays.append(1000 * (arrived - published[message["event"]["seq"]]))
    sends = args.events * args.clients
    asgi_s = used["by_process_s"].get("asgi")
    print(
        f"{args.clients} watchers, {args.events} events in bursts of {args.burst}: "
        f"{len(delays)} of {sends} delivered in {len(received)} frames"
        + ("" if delivered_all else " (not all within 30 s)")
    )
    if asgi_s is not None:
        print(f"Daphne CPU per event delivered: {1e6 * asgi_s / sends:.1f} us")
    if delays:
        delays.sort()
        print(
            f"published to delivered: p50 {statistics.median(delays):.1f} ms, "
            f"p99 {delays[int(0.99 * (len(delays) - 1))]:.1f} ms"
        )
    return 0 if delivered_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
