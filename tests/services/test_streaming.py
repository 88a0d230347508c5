"""TextStream: how live text is coalesced, and the offsets a watcher joins pieces by."""

from __future__ import annotations

import pytest

from planner_ui.models import Step
from planner_ui.services.streaming import (
    TextStream,
    live_text_clear,
    live_text_save,
    live_text_snapshot,
    utf16_len,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def recorder() -> tuple[list[tuple[str, str]], TextStream, Clock]:
    sent: list[tuple[str, str]] = []
    clock = Clock()
    stream = TextStream(lambda piece, text: sent.append((piece, text)), clock=clock)
    return sent, stream, clock


def test_the_first_piece_goes_at_once_then_pieces_are_coalesced_per_interval() -> None:
    sent, stream, clock = recorder()
    stream.write("Tea")
    assert sent == [("Tea", "Tea")]
    clock.now += 0.03
    stream.write(" has")
    clock.now += 0.03
    stream.write(" less")
    assert len(sent) == 1  # within 100 ms of the last send: held back
    clock.now += 0.05
    stream.write(" caffeine")
    assert sent[-1] == (" has less caffeine", "Tea has less caffeine")


def test_flush_sends_what_is_held_and_nothing_when_empty() -> None:
    sent, stream, clock = recorder()
    stream.write("a")
    stream.write("b")
    stream.flush()
    stream.flush()
    assert sent == [("a", "a"), ("b", "ab")]


def test_offsets_count_as_javascript_does() -> None:
    # An emoji outside the basic plane is two UTF-16 units in the browser, one code point here.
    assert utf16_len("tea 🍵") == 6
    assert utf16_len("thé") == 3


def test_the_text_so_far_is_kept_per_step_until_cleared(redis_url) -> None:
    live_text_save(7001, "draft", 2, "Tea has")
    live_text_save(7001, "check", 1, "Checking")
    live_text_save(7001, "draft", 2, "Tea has less")
    assert live_text_snapshot(7001) == [
        {"step_id": "check", "iteration": 1, "offset": 0, "text": "Checking"},
        {"step_id": "draft", "iteration": 2, "offset": 0, "text": "Tea has less"},
    ]
    live_text_clear(7001, "draft")
    live_text_clear(7001, "check")
    assert live_text_snapshot(7001) == []


@pytest.mark.django_db(transaction=True)
def test_a_finish_forgets_its_steps_text_once_it_commits_and_only_if_it_recorded(
    redis_url, make_user
) -> None:
    from planner_ui.agents.executor import StepOutcome
    from planner_ui.services.steps import step_finish
    from tests.services.test_concurrency import running_run

    run = running_run(make_user(), [("a", []), ("b", []), ("c", ["a", "b"])])
    Step.objects.filter(run=run).update(worker="w1")
    live_text_save(run.pk, "a", 1, "Tea has")
    live_text_save(run.pk, "b", 1, "Coffee")
    try:
        # Another worker's finish of a records nothing (w1 holds it) and leaves its text.
        step_finish(run.pk, "a", outcome=StepOutcome(output="late"), worker="w2")
        assert [m["step_id"] for m in live_text_snapshot(run.pk)] == ["a", "b"]
        step_finish(run.pk, "a", outcome=StepOutcome(output="Tea has less"), worker="w1")
        assert [m["step_id"] for m in live_text_snapshot(run.pk)] == ["b"]
        assert Step.objects.get(run=run, step_id="a").output == "Tea has less"
    finally:
        # Run ids come round again in the next tests, Redis's keys stay: leave none behind.
        live_text_clear(run.pk, "a")
        live_text_clear(run.pk, "b")
