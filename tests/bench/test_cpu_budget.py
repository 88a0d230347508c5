"""The price of a millisecond of CPU a step, and agentsite's CPU read against it.

Nothing here imports bench.floor: its Celery app would become this process's current app, and
the tests that send tasks through agentsite's would send them through the floor's."""

from __future__ import annotations

import time

import pytest

from bench import cpu_budget


def test_the_cpu_is_split_as_a_step_spends_it_before_and_after_its_call():
    before, after = cpu_budget.split(10)
    assert before == pytest.approx(0.004) and after == pytest.approx(0.006)


def test_the_price_is_the_least_squares_slope_of_the_ratio_over_the_cpu():
    assert cpu_budget.slope([(0, 1.05), (4, 1.11), (8, 1.17)]) == pytest.approx(0.015)
    assert cpu_budget.slope([(0, 1.0), (4, 1.2), (8, 1.2)]) == pytest.approx(0.025)
    assert cpu_budget.slope([(4, 1.0), (4, 1.2)]) is None  # one CPU: no slope


def _run(floor: dict) -> dict:
    return {
        "shape": "fanout",
        "plan_steps": 32,
        "makespan_over_ideal": 1.3,
        "cpu": {"by_process_s": {"worker": 0.33, "database": 0.099, "asgi-1": 0.165}},
        "floor": floor,
    }


def test_agentsite_s_cpu_a_step_is_read_against_the_floor_s_price():
    floor = {"makespan_over_ideal": 1.07, "worker_ms_per_step": 4.0, "ratio_per_cpu_ms": 0.015}
    run = _run(floor)
    found = cpu_budget.budget(run, steps=33)
    assert found == {
        "ms_per_step_by_process": {"asgi-1": 5.0, "database": 3.0, "worker": 10.0},
        "over_floor_ms_per_step": 14.0,
        "floor_ratio_at_that_cpu": 1.28,
    }
    run["cpu_budget"] = found
    line = cpu_budget.budget_line(run)
    assert "asgi-1 5.0, database 3.0, worker 10.0 ms; 14.0 ms over bare Celery's 4.0" in line
    assert "would put the floor at 1.28 (agentsite 1.30, floor 1.07)" in line


def test_without_the_floor_s_sweep_there_is_no_budget():
    assert (
        cpu_budget.budget(_run({"makespan_over_ideal": 1.07, "worker_ms_per_step": 4.0}), 33)
        is None
    )
    assert cpu_budget.budget({**_run({}), "floor": None}, 33) is None


def test_a_floor_task_spends_the_cpu_it_is_given():
    started = time.process_time()
    cpu_budget.spin(0.02)
    assert time.process_time() - started >= 0.02


def test_the_sweep_is_printed_with_its_price():
    floor = {
        "cpu_sweep": [
            {"cpu_ms": 4.0, "makespan_over_ideal": 1.1},
            {"cpu_ms": 8.0, "makespan_over_ideal": 1.16},
        ],
        "ratio_per_cpu_ms": 0.0152,
    }
    line = cpu_budget.sweep_line("layered", 32, floor)
    assert line.endswith("4 ms 1.100, 8 ms 1.160; 0.0152 of the ratio a ms of CPU a step")
