"""A step's text as the model writes it, pushed to the run's watchers without being stored.

The event log keeps what lasts (tool calls, outputs, failures); the text in flight is only for
watching, so it is broadcast but not logged, and coalesced so that a model writing fifty
tokens a second costs a handful of messages a second, not fifty.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from .events import run_group

log = logging.getLogger(__name__)

FLUSH_INTERVAL_S = 0.1


class TextStream:
    """Buffers text pieces and hands them on at most every `interval_s` (and on close)."""

    def __init__(
        self,
        send: Callable[[str], None],
        *,
        interval_s: float = FLUSH_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send = send
        self._interval = interval_s
        self._clock = clock
        self._buffer: list[str] = []
        # The first piece goes out at once: a watcher should see the model start writing.
        self._last = float("-inf")

    def write(self, piece: str) -> None:
        self._buffer.append(piece)
        if self._clock() - self._last >= self._interval:
            self.flush()

    def flush(self) -> None:
        self._last = self._clock()
        if self._buffer:
            text, self._buffer = "".join(self._buffer), []
            self._send(text)


def text_broadcaster(run_id: int, step_id: str) -> Callable[[int], TextStream]:
    """A factory of one TextStream per model call of a step (`iteration` numbers them)."""

    def stream(iteration: int) -> TextStream:
        def send(text: str) -> None:
            text_broadcast(run_id, {"step_id": step_id, "iteration": iteration, "text": text})

        return TextStream(send)

    return stream


def text_broadcast(run_id: int, message: dict[str, Any]) -> None:
    try:
        async_to_sync(get_channel_layer().group_send)(
            run_group(run_id), {"type": "run.text", "text": message}
        )
    except Exception:
        # Live text is a courtesy: the step's output is stored when it finishes.
        log.warning("could not broadcast live text of run %s", run_id, exc_info=True)
