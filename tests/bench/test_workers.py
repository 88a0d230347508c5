"""How the benchmark deals a worker's slots out over several worker processes."""

from __future__ import annotations

import pytest

from bench.scheduler import worker_slots, workers_cpu_s


@pytest.mark.parametrize(
    ("slots", "workers", "dealt"),
    [(16, 1, [16]), (16, 2, [8, 8]), (9, 2, [5, 4]), (8, 8, [1] * 8), (10, 4, [3, 3, 2, 2])],
)
def test_slots_are_dealt_out_as_evenly_as_they_go(slots, workers, dealt):
    assert worker_slots(slots, workers) == dealt
    assert sum(worker_slots(slots, workers)) == slots


def test_the_workers_cpu_adds_every_worker_process_and_nothing_else():
    used = {"benchmark": 0.5, "worker": 0.25, "worker-2": 0.25, "asgi-1": 0.75, "redis": 0.125}
    assert workers_cpu_s(used) == 0.5
    assert workers_cpu_s({"asgi-1": 1.0}) is None
