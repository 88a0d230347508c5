"""The benchmark's arithmetic, where it is not obvious: what the consumer holds back."""

from __future__ import annotations

from bench.metrics import publish_holds


def test_events_published_in_order_are_never_held():
    assert publish_holds([(0.0, 1), (0.1, 2), (0.2, 3)]) == {
        "events": 3,
        "held": 0,
        "hold": {"count": 0, "p50_ms": None, "p99_ms": None, "max_ms": None},
    }


def test_an_event_published_early_waits_for_every_one_before_it():
    # 3 and 4 come before 2; 4 also waits for 3, which came after it.
    order = publish_holds([(0.000, 1), (0.010, 4), (0.012, 3), (0.030, 2), (0.031, 5)])
    assert (order["events"], order["held"]) == (5, 2)
    assert order["hold"]["max_ms"] == 20.0  # 4 waited from 0.010 until 2 came at 0.030
    assert order["hold"]["count"] == 2
