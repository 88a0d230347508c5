"""The benchmark's report: the table it prints and the targets it checks."""

from __future__ import annotations

from typing import Any


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _pair(figures: dict[str, Any]) -> str:
    return f"{_ms(figures['p50_ms'])} / {_ms(figures['p99_ms'])}"


def table(report: dict[str, Any]) -> str:
    config = report["settings"]
    columns = (
        ("shape", "<8"),
        ("steps", ">5"),
        ("width", ">5"),
        ("path", ">4"),
        ("makespan", ">8"),
        ("ideal", ">6"),
        ("ratio", ">5"),
        ("floor", ">5"),
        ("speedup", ">12"),
        ("step+", ">5"),
        ("dispatch ms", ">13"),
        ("ws event ms", ">15"),
        ("busy", ">4"),
        ("db ms", ">5"),
        ("others", ">6"),
    )
    header = " ".join(f"{name:{align}}" for name, align in columns)
    lines = [
        f"latency {config['latency_s']} s per model call, {config['slots']} worker slots "
        f"({config['pool']}), {config['clients']} WebSocket clients per run, "
        f"{config.get('asgi', 'daphne x 1')}, {config['database']}{_delay(config)}, "
        f"Redis {config['redis']}, "
        f"{report['machine']['cpus']} CPUs",
        "",
        header,
        "-" * len(header),
    ]
    for run in report["summary"]:
        cpu = run["cpu"]
        busy = "-" if cpu["busy_fraction"] is None else f"{cpu['busy_fraction']:.0%}"
        others = "-" if cpu["others_s"] is None else f"{cpu['others_s']:.1f}s"
        database = cpu.get("database_ms_per_step")
        database_ms = "-" if database is None else f"{database:.1f}"
        cells = (
            run["shape"],
            run["plan_steps"],
            run["width"],
            run["critical_path_steps"],
            f"{run['makespan_s']:.2f}s",
            f"{run['ideal_makespan_s']:.2f}s",
            "-" if run["makespan_over_ideal"] is None else f"{run['makespan_over_ideal']:.2f}",
            f"{run['floor']['makespan_over_ideal']:.2f}" if "floor" in run else "-",
            f"{run['speedup']:.2f} ({run['ideal_speedup']:.2f})",
            f"{run['step_overhead_p50_ms']:.0f}",
            _pair(run["dispatch"]),
            _pair(run["websocket"]) if run["websocket"]["clients"] else "-",
            busy,
            database_ms,
            others,
        )
        lines.append(
            " ".join(f"{cell:{align}}" for cell, (_, align) in zip(cells, columns, strict=True))
        )
    lines += [
        "",
        "steps: plan steps (the synthesis step runs after them in every plan); width: widest "
        "layer; path: critical path in steps, synthesis included",
        "makespan: plan approval to the last step's end; ideal: path x latency (a slot-limited "
        "schedule when slots < width); ratio: makespan / ideal",
        "floor: the same ratio for the same DAG run as bare Celery tasks (sleep, count the "
        "dependents down, enqueue) on the same Redis and worker settings, no database",
        "speedup: steps x latency / makespan (ideal: steps / path); step+: median step duration "
        "minus the latency, ms",
        "dispatch: a step's start minus its last dependency's end; ws event: arrival at a client "
        "minus the event's created_at; both p50 / p99",
        "busy: share of all CPUs busy during the run; db ms: the database server's CPU per "
        "step (PostgreSQL on this machine; SQLite's is the worker's); others: CPU seconds used "
        "meanwhile by processes the benchmark did not start, the database server apart",
        "",
        *(
            f"{'met   ' if target['met'] else 'MISSED'} {target['text']}"
            for target in report["targets"]
        ),
    ]
    waited = [
        f"{run['shape']} {run['plan_steps']} ({run['dispatch']['waited_for_slot']})"
        for run in report["summary"]
        if run["dispatch"]["waited_for_slot"]
    ]
    if waited:
        lines.append(
            "Steps that waited for a free slot are left out of dispatch: " + ", ".join(waited)
        )
    others = [
        run["cpu"]["others_s"] for run in report["runs"] if run["cpu"]["others_s"] is not None
    ]
    capacity = sum(run["cpu"]["window_s"] for run in report["runs"]) * report["machine"]["cpus"]
    if others and capacity and sum(others) / capacity > 0.1:
        lines.append(
            f"Processes not started by the benchmark (other programs; a database on this "
            f"machine other than the benchmark's, an external Redis) kept "
            f"{sum(others) / capacity:.0%} of the CPUs busy during the runs."
        )
    missing = sum(run["websocket"]["missing"] for run in report["runs"])
    if missing:
        lines.append(f"WebSocket clients missed {missing} event messages in all.")
    return "\n".join(lines)


def targets(runs: list[dict[str, Any]], latency_s: float) -> list[dict[str, Any]]:
    """The targets of the hot-path issue, each checked against the runs it is about."""
    targets = []

    def target(met: bool, text: str) -> None:
        targets.append({"met": met, "text": text})

    limits = {"layered": None, "chain": 1.05, "fanout": 1.25}
    for run in runs:
        if run["plan_steps"] != 32 or latency_s != 0.2 or run["shape"] not in limits:
            continue
        watched = run["websocket"]["clients"]
        limit = limits[run["shape"]] or (1.10 if watched >= 50 else 1.05)
        floor = f", floor {run['floor']['makespan_over_ideal']:.2f}" if "floor" in run else ""
        target(
            run["makespan_over_ideal"] <= limit,
            f"{run['shape']} of 32 at 200 ms, {watched} watchers: makespan / ideal "
            f"{run['makespan_over_ideal']:.2f} <= {limit:.2f}{floor}",
        )
    # With more ready steps than slots, a step also queues for a slot: not what this is about.
    dispatch = [run["dispatch"] for run in runs if run["dispatch"]["count"]]
    dispatch = [d for d, run in zip(dispatch, runs, strict=False) if run["width"] <= run["slots"]]
    if dispatch:
        p50 = max(d["p50_ms"] for d in dispatch)
        p99 = max(d["p99_ms"] for d in dispatch)
        target(
            p50 <= 5, f"dispatch p50 <= 5 ms: at most {p50:.1f} ms (runs no wider than the slots)"
        )
        target(p99 <= 20, f"dispatch p99 <= 20 ms: at most {p99:.1f} ms")
    layered = [
        run["websocket"]["p50_ms"]
        for run in runs
        if run["shape"] == "layered" and run["websocket"]["clients"] >= 50
    ]
    if layered and layered[0] is not None:
        target(
            max(layered) <= 15,
            f"WebSocket event p50 <= 15 ms, layered, 50 watchers: {max(layered):.1f} ms",
        )
    worker = [run["cpu"]["worker_ms_per_step"] for run in runs]
    if worker and None not in worker:
        target(max(worker) <= 12, f"worker CPU per step <= 12 ms: at most {max(worker):.1f} ms")
    daphne = [run["cpu"]["daphne_us_per_message"] for run in runs]
    daphne = [value for value in daphne if value is not None]
    if daphne:
        target(
            max(daphne) <= 88,
            f"Daphne CPU per message sent <= 88 us (half of 176): at most {max(daphne):.0f} us",
        )
    return targets


def _delay(config: dict[str, Any]) -> str:
    """The database's added distance (--db-delay-ms), where one was asked for."""
    delay = config.get("db_delay_ms")
    return f" {delay:g} ms away" if delay else ""
