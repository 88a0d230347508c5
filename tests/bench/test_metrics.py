"""The benchmark's arithmetic, where it is not obvious: what the consumer holds back."""

from __future__ import annotations

import json

from bench.metrics import (
    StepTiming,
    critical_path,
    event_latencies,
    publish_delays,
    publish_holds,
    timeline,
)


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


def test_publish_delays_are_arrival_minus_the_events_time_by_type():
    def message(kind: str, at: str) -> str:
        return json.dumps({"type": "event", "event": {"type": kind, "at": at, "seq": 1}})

    at = 1_700_000_000.0  # 2023-11-14T22:13:20Z
    published = [
        (at + 0.004, message("step.started", "2023-11-14T22:13:20+00:00")),
        (at + 0.010, message("step.queued", "2023-11-14T22:13:20+00:00")),
        (at + 0.030, message("step.queued", "2023-11-14T22:13:20.010000+00:00")),
    ]
    delays = publish_delays(published)
    assert delays["count"] == 3 and delays["max_ms"] == 20.0
    assert delays["by_type"]["step.started"]["p50_ms"] == 4.0
    assert delays["by_type"]["step.queued"]["count"] == 2


def test_each_event_of_a_batch_frame_counts_once_arriving_with_its_frame():
    def event(seq: int, kind: str) -> dict:
        return {
            "type": "event",
            "event": {"seq": seq, "type": kind, "at": "2023-11-14T22:13:20+00:00"},
        }

    at = 1_700_000_000.0  # 2023-11-14T22:13:20Z
    batch = {"type": "batch", "messages": [event(1, "step.succeeded"), event(2, "step.queued")]}
    received = [
        (at + 0.005, json.dumps(batch).encode()),
        (at + 0.008, json.dumps(event(3, "step.started")).encode()),
        (at + 0.009, json.dumps({"type": "text", "step_id": "s1", "text": "x"}).encode()),
    ]
    delivered = event_latencies(received)
    assert [round(d * 1000, 3) for d in delivered.event_delays_s] == [5.0, 5.0, 8.0]
    assert delivered.copies_by_seq == {1: 1, 2: 1, 3: 1}
    assert delivered.text_messages == 1


def test_dispatch_splits_into_the_wait_for_the_write_lock_and_what_came_before():
    from bench.metrics import StepTiming, dispatch_phases

    steps = [
        StepTiming("a", [], 0.0, 1.0),
        StepTiming("b", ["a"], 1.030, 2.0),  # queued at 1.002, claimed 28 ms later
        StepTiming("c", ["a"], 1.010, 2.0),  # no wait recorded (an older event)
    ]
    phases = dispatch_phases(steps, {"b": 1.002, "c": 1.002}, (), {"b": 0.020})
    assert [round(x * 1000, 3) for x in phases.to_queued] == [2.0, 2.0]
    assert [round(x * 1000, 3) for x in phases.to_started] == [28.0, 8.0]
    assert [round(x * 1000, 3) for x in phases.claim_waits] == [20.0]
    assert [round(x * 1000, 3) for x in phases.to_claiming] == [8.0]


def test_dispatch_is_told_apart_for_steps_carried_on_and_steps_through_the_queue():
    from bench.metrics import dispatch_latencies

    steps = [
        StepTiming("a", [], 0.0, 1.0),
        StepTiming("b", ["a"], 1.0, 2.0, carried=True),  # claimed in a's finish
        StepTiming("c", ["a"], 1.012, 2.0),
        StepTiming("d", ["a"], 1.020, 2.0),
    ]
    dispatch = dispatch_latencies(steps, approved_at=0.0, slots=4)
    assert [round(x * 1000) for x in dispatch.after_parent_s] == [0, 12, 20]
    assert [round(x * 1000) for x in dispatch.carried_s] == [0]
    assert [round(x * 1000) for x in dispatch.through_queue_s] == [12, 20]


def test_the_makespan_s_chain_follows_the_parent_that_ended_last_and_sums_to_the_makespan():
    # a -> b (carried on) and a -> c (queued); d waits for both, c ends last; d is queued.
    steps = [
        StepTiming("a", [], 1.00, 1.21),
        StepTiming("b", ["a"], 1.211, 1.42, carried=True),
        StepTiming("c", ["a"], 1.23, 1.44),
        StepTiming("d", ["b", "c"], 1.45, 1.66),
    ]
    path = critical_path(steps, approved_at=0.99, latency_s=0.2)
    assert (path.steps, path.carried, path.queued) == (3, 0, 2)  # a, c, d: b is off the chain
    assert round(path.in_steps_s * 1000) == 30  # 10 + 10 + 10 over the latency
    assert round(path.first_s * 1000) == 10 and round(path.queued_s * 1000) == 30  # 20 + 10
    makespan = 1.66 - 0.99
    assert abs(path.steps * 0.2 + path.in_steps_s + path.first_s + path.queued_s - makespan) < 1e-9


def test_a_chain_step_claimed_in_its_parent_s_finish_counts_as_carried_on():
    steps = [StepTiming("a", [], 0.0, 0.2), StepTiming("b", ["a"], 0.201, 0.4, carried=True)]
    path = critical_path(steps, approved_at=0.0, latency_s=0.2)
    assert (path.carried, path.queued, round(path.carried_s * 1000)) == (1, 0, 1)
    assert path.as_dict()["carried_ms"] == 1.0


def test_the_timeline_lists_steps_in_the_order_they_started_after_the_approval():
    steps = [
        StepTiming("join", ["b", "a"], 10.5004, 10.7),
        StepTiming("b", [], 10.02, 10.23),
        StepTiming("a", [], 10.01, 10.25, carried=False),
        StepTiming("c", ["a"], 10.2512, 10.46, carried=True),
    ]
    assert timeline(steps, approved_at=10.0) == [
        ["a", 10.0, 250.0, False],
        ["b", 20.0, 230.0, False],
        ["c", 251.2, 460.0, True],
        ["join", 500.4, 700.0, False],
    ]
