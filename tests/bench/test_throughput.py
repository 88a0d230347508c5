"""The throughput mode's report: how its dispatched steps were claimed."""

from __future__ import annotations

from bench.metrics import summary_ms
from bench.throughput import throughput_table


def _figures(carried: list[float], queued: list[float]) -> dict:
    return {
        "runs": 2,
        "steps_per_run": 4,
        "clients": 0,
        "steps": 8,
        "wall_s": 1.0,
        "steps_per_s": 8.0,
        "steps_per_s_per_core": 4.0,
        "ceiling_steps_per_s": 80.0,
        "worker_cpu_ms_per_step": 9.0,
        "stack_cpu_ms_per_step": 12.0,
        "failed_runs": 0,
        "dispatch": summary_ms(carried + queued),
        "dispatch_carried": summary_ms(carried),
        "dispatch_through_queue": summary_ms(queued),
        "dispatch_waited_for_slot": 2,
        "database_connections_max": None,
    }


def test_the_steps_that_went_through_the_queue_are_reported_apart():
    table = throughput_table(_figures([0.0, 0.0], [0.010, 0.030]), "sqlite", 16)
    assert "(4 steps; 2 waited for a slot and are left out): 2 carried on, " in table
    assert "2 through the queue at 20.0 / 29.8 ms" in table


def test_a_run_whose_steps_were_all_carried_on_says_none_went_through_the_queue():
    table = throughput_table(_figures([0.0, 0.001], []), "sqlite", 16)
    assert "2 carried on, none through the queue" in table
