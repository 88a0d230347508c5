"""A step's text as the model writes it, pushed to the run's watchers without being logged.

The event log keeps what lasts (tool calls, outputs, failures); the text in flight is only for
watching. It is coalesced, so that a model writing fifty tokens a second costs a handful of
messages a second, and the text so far is kept in Redis while the step runs, so that a watcher
who connects mid-step (a reload, a second tab, a dropped connection) sees it from the start.
Each piece carries its offset, so that a watcher can join the snapshot and the pieces after it
without a gap or a repeat.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import redis

from planner_ui.stores.redis_store import redis_client, redis_key

from .broadcast import group_publish
from .events import run_group

log = logging.getLogger(__name__)

FLUSH_INTERVAL_S = 0.1
# How long the text of a step that never finished (its worker died) stays around.
LIVE_TTL_S = 3600


class TextStream:
    """Buffers text pieces and hands them on at most every `interval_s` (and on flush).

    `send(piece, text_so_far)` receives each coalesced piece and the whole text up to it.
    """

    def __init__(
        self,
        send: Callable[[str, str], None],
        *,
        interval_s: float = FLUSH_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send = send
        self._interval = interval_s
        self._clock = clock
        self._buffer: list[str] = []
        self._text = ""
        # The first piece goes out at once: a watcher should see the model start writing.
        self._last = float("-inf")

    def write(self, piece: str) -> None:
        self._buffer.append(piece)
        if self._clock() - self._last >= self._interval:
            self.flush()

    def flush(self) -> None:
        self._last = self._clock()
        if self._buffer:
            piece, self._buffer = "".join(self._buffer), []
            self._text += piece
            self._send(piece, self._text)


def utf16_len(text: str) -> int:
    """A string's length as JavaScript counts it, which is what the browser compares offsets to."""
    return len(text.encode("utf-16-le")) // 2


def text_broadcaster(run_id: int, step_id: str) -> Callable[[int], TextStream]:
    """A factory of one TextStream per model call of a step (`iteration` numbers them)."""

    def stream(iteration: int) -> TextStream:
        def send(piece: str, text: str) -> None:
            message = {
                "step_id": step_id,
                "iteration": iteration,
                "offset": utf16_len(text) - utf16_len(piece),
                "text": piece,
            }
            # Kept for late joiners and published in one round trip.
            group_publish(
                [
                    (
                        run_group(run_id),
                        {
                            "type": "run.text",
                            # Read by watchers that follow some steps' text only.
                            "step_id": step_id,
                            "json": json.dumps({"type": "text", **message}),
                        },
                    )
                ],
                along=lambda pipe: _live_text_keep(pipe, run_id, step_id, iteration, text),
            )

        return TextStream(send)

    return stream


# --- the text so far, for watchers who join mid-step -------------------------------------------


def _live_key(run_id: int) -> str:
    return redis_key("live", run_id)


def live_text_save(run_id: int, step_id: str, iteration: int, text: str) -> None:
    """Keep a step's text so far (streams do it as they publish)."""
    try:
        pipe = redis_client().pipeline(transaction=False)
        _live_text_keep(pipe, run_id, step_id, iteration, text)
        pipe.execute()
    except redis.RedisError:
        log.warning("could not keep the live text of run %s", run_id, exc_info=True)


def _live_text_keep(
    pipe: redis.client.Pipeline, run_id: int, step_id: str, iteration: int, text: str
) -> None:
    key = _live_key(run_id)
    pipe.hset(key, step_id, json.dumps({"iteration": iteration, "text": text}))
    pipe.expire(key, LIVE_TTL_S)


def live_text_clear(run_id: int, step_id: str) -> None:
    """Forget a step's text in flight: it finished (its output is stored) or it waits for a
    person. Called after the transaction that ended the step, not inside it."""
    try:
        redis_client().hdel(_live_key(run_id), step_id)
    except redis.RedisError:
        log.warning("could not clear the live text of run %s", run_id, exc_info=True)


def live_text_forget(pipe: redis.client.Pipeline, run_id: int, step_id: str) -> None:
    """live_text_clear's command, added to a pipeline that goes anyway: a step's finish hands
    it to its transaction's round trip to Redis once committed (broadcast.AfterCommit.along),
    which saves one round trip a step."""
    pipe.hdel(_live_key(run_id), step_id)


def live_text_snapshot(run_id: int) -> list[dict[str, Any]]:
    """The text so far of every step of the run that is writing now, as text messages."""
    try:
        stored = redis_client().hgetall(_live_key(run_id))
    except redis.RedisError:
        log.warning("could not read the live text of run %s", run_id, exc_info=True)
        return []
    messages = []
    for step_id, value in sorted(stored.items()):
        entry = json.loads(value)
        messages.append(
            {
                "step_id": step_id.decode() if isinstance(step_id, bytes) else step_id,
                "iteration": entry["iteration"],
                "offset": 0,
                "text": entry["text"],
            }
        )
    return messages
