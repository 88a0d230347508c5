"""What a WebSocket frame to a watcher may hold: no frame over the limit, no event lost."""

from __future__ import annotations

import json

from planner_ui.core.frames import event_fitted, frames, text_fitted


def _event(seq: int, **payload: object) -> str:
    event = {"seq": seq, "type": "step.succeeded", "step_id": "s1", "payload": payload, "at": "t"}
    return json.dumps({"type": "event", "event": event})


def test_an_event_that_fits_is_left_as_it_is() -> None:
    text = _event(1, output="short", tokens_in=3)
    assert event_fitted(text, limit=1000) is text


def test_a_long_event_keeps_its_keys_and_the_start_of_its_texts() -> None:
    text = _event(7, output="a" * 5000, error="", tokens_in=3, warnings=["w"] * 500)
    fitted = event_fitted(text, limit=1000)
    assert len(fitted) <= 1000
    event = json.loads(fitted)["event"]
    assert (event["seq"], event["type"], event["step_id"], event["cut"]) == (
        7,
        "step.succeeded",
        "s1",
        True,
    )
    assert set(event["payload"]) == {"output", "error", "tokens_in", "warnings"}
    assert event["payload"]["output"].startswith("aaaa")
    assert event["payload"]["output"].endswith("more characters]")
    assert event["payload"]["tokens_in"] == 3
    # The next watcher of the same event gets the same cut, made once.
    assert event_fitted(text, limit=1000) is fitted


def test_frames_hold_every_message_in_order_each_within_the_limit() -> None:
    texts = [_event(seq, output="x" * (50 * seq)) for seq in range(1, 30)]
    made = frames(texts, limit=2000)
    assert len(made) > 1
    assert all(len(frame) <= 2000 for frame in made)
    seqs = []
    for frame in made:
        message = json.loads(frame)
        batch = message["messages"] if message["type"] == "batch" else [message]
        seqs += [m["event"]["seq"] for m in batch]
    assert seqs == list(range(1, 30))


def test_one_message_is_its_own_frame_and_none_is_no_frame() -> None:
    text = _event(1, output="x")
    assert frames([text]) == [text]
    assert frames([]) == []


def test_a_long_text_so_far_goes_as_its_end_at_its_offset() -> None:
    message = {"type": "text", "step_id": "s1", "iteration": 1, "offset": 0, "text": "ab" * 1000}
    fitted = text_fitted(message, limit=1000)
    assert fitted["offset"] + len(fitted["text"]) == 2000
    assert "ab" * 1000 == ("ab" * 1000)[: fitted["offset"]] + fitted["text"]
    assert len(json.dumps(fitted)) <= 1000
    short = {**message, "text": "hello"}
    assert text_fitted(short, limit=1000) is short
