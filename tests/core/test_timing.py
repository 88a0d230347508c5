"""Active time and its gaps, a step's segments from its events, and the Gantt chart's axis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from planner_ui.core.events import EventType
from planner_ui.core.timing import (
    IDLE,
    MIN_IDLE_GAP_S,
    PAUSED,
    WAITING,
    Gap,
    Scale,
    Segment,
    Span,
    merge,
    run_timing,
    span_ending,
    step_segments,
    tick_label,
    tick_step,
)

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def span(start: float, end: float) -> Span:
    return Span(at(start), at(end))


def test_merge_joins_overlapping_and_touching_spans_in_order() -> None:
    assert merge([span(5, 6), span(0, 2), span(1, 3), span(3, 4)]) == [span(0, 4), span(5, 6)]


def test_merge_of_nothing_is_nothing() -> None:
    assert merge([]) == []


def test_a_retry_minutes_later_leaves_the_idle_gap_out_of_the_active_time() -> None:
    # 0.4 s of work, a finish, then a person retries three minutes later: 0.2 s more.
    timing = run_timing([span(0, 0.4), span(180.4, 180.6)], holds=[])

    assert round(timing.active_s, 3) == 0.6
    assert round(timing.elapsed_s, 3) == 180.6
    assert timing.gaps == (Gap(at(0.4), at(180.4), IDLE),)


def test_a_gap_is_named_for_the_hold_that_covers_most_of_it() -> None:
    timing = run_timing(
        [span(0, 1), span(31, 32), span(100, 101)],
        holds=[
            Gap(at(1), at(31), WAITING),
            Gap(at(40), at(99), PAUSED),
            Gap(at(32), at(35), WAITING),
        ],
    )

    assert [(g.reason, g.seconds) for g in timing.gaps] == [(WAITING, 30.0), (PAUSED, 68.0)]
    assert timing.active_s == 3.0
    assert timing.gap_seconds(PAUSED) == 68.0


def test_a_short_idle_stretch_is_the_machinerys_own_time_and_counts_as_work() -> None:
    short = MIN_IDLE_GAP_S / 2
    timing = run_timing([span(0, 1), span(1 + short, 2 + short)], holds=[])

    assert timing.gaps == ()
    assert timing.active == (span(0, 2 + short),)
    assert timing.active_s == 2 + short


def test_a_short_wait_for_a_person_is_still_a_gap() -> None:
    timing = run_timing([span(0, 1), span(1.5, 2)], holds=[Gap(at(1), at(1.5), WAITING)])

    assert timing.gaps == (Gap(at(1), at(1.5), WAITING),)
    assert timing.active_s == 1.5


def test_a_wait_after_the_last_work_is_a_gap_up_to_its_end() -> None:
    timing = run_timing([span(0, 2)], holds=[Gap(at(2), at(50), WAITING)])

    assert timing.gaps == (Gap(at(2), at(50), WAITING),)
    assert timing.active_s == 2.0 and timing.elapsed_s == 50.0


def test_no_work_is_no_time() -> None:
    timing = run_timing([], holds=[Gap(at(0), at(5), PAUSED)])

    assert (timing.active_s, timing.elapsed_s, timing.start, timing.gaps) == (0.0, 0.0, None, ())


def test_a_model_call_is_stamped_when_it_returns() -> None:
    assert span_ending(at(10), 2.5) == span(7.5, 10)


def test_a_steps_segments_follow_its_events_and_say_what_closed_them() -> None:
    events = [
        ("a", EventType.STEP_QUEUED, at(0)),
        ("a", EventType.STEP_STARTED, at(1)),
        ("b", EventType.STEP_QUEUED, at(1)),
        ("a", EventType.STEP_TOOL_CALL, at(2)),  # not a change of state
        ("a", EventType.STEP_WAITING, at(3)),
        ("a", EventType.STEP_QUEUED, at(10)),
        ("a", EventType.STEP_STARTED, at(11)),
        ("a", EventType.STEP_FAILED, at(12)),
        ("a", EventType.STEP_QUEUED, at(200)),  # retried
        ("a", EventType.STEP_STARTED, at(201)),
        ("a", EventType.STEP_SUCCEEDED, at(202)),
        ("b", EventType.STEP_STARTED, at(2)),
    ]

    segments = step_segments(events, now=at(300))

    assert segments["a"] == [
        Segment(at(0), at(1), "queued", "running"),
        Segment(at(1), at(3), "running", "waiting"),
        Segment(at(3), at(10), "waiting", "queued"),
        Segment(at(10), at(11), "queued", "running"),
        Segment(at(11), at(12), "running", "failed"),
        Segment(at(200), at(201), "queued", "running"),
        Segment(at(201), at(202), "running", "succeeded"),
    ]
    # Still running: it goes on to now, closed by nothing yet.
    assert segments["b"] == [
        Segment(at(1), at(2), "queued", "running"),
        Segment(at(2), at(300), "running", ""),
    ]


def test_the_axis_gives_active_spans_their_length_and_each_gap_a_narrow_band() -> None:
    timing = run_timing([span(0, 1), span(181, 2 + 180)], holds=[])
    scale = Scale(timing)

    # 2 s of work and one gap drawn 6% of that wide: 2.12 units in all.
    assert scale.pct(at(0)) == 0.0
    assert scale.pct(at(1)) == round(100 * 1 / 2.12, 2)
    assert scale.pct(at(181)) == round(100 * 1.12 / 2.12, 2)
    assert scale.pct(at(182)) == 100.0
    assert scale.pct(at(500)) == 100.0
    # Half way through the gap is half way through its band.
    assert scale.pct(at(91)) == round(100 * 1.06 / 2.12, 2)
    assert scale.width_pct(span(181, 181)) == 0.3  # a blink stays visible


def test_the_axis_ticks_count_active_time_and_skip_the_gaps() -> None:
    timing = run_timing([span(0, 1), span(181, 182)], holds=[])
    ticks = Scale(timing).ticks()

    assert [t.label for t in ticks] == ["0.0 s", "0.5 s", "1.0 s", "1.5 s", "2.0 s"]
    # 1 s of active time falls at the gap's start; 1.5 s half way into the second span.
    assert ticks[2].pct == round(100 * 1 / 2.12, 2)
    assert ticks[3].pct == round(100 * 1.62 / 2.12, 2)
    assert ticks[-1].pct == 100.0


def test_an_axis_without_active_time_has_no_ticks() -> None:
    assert Scale(run_timing([], [])).ticks() == []


def test_tick_steps_are_round_and_few() -> None:
    assert tick_step(0.4) == 0.1
    assert tick_step(2.0) == 0.5
    assert tick_step(7.0) == 1.0
    assert tick_step(45.0) == 10.0
    assert tick_step(400.0) == 60.0
    assert tick_step(3000.0) == 600.0  # whole minutes past a minute
    assert tick_step(86_400.0 * 3) == 43_200.0


def test_tick_labels_show_as_many_decimals_as_the_step_needs() -> None:
    assert tick_label(0.25, 0.05) == "0.25 s"
    assert tick_label(3.0, 1.0) == "3 s"
    assert tick_label(120.0, 60.0) == "2 min"
    assert tick_label(90.0, 30.0) == "1 min 30 s"
