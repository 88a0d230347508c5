"""What one WebSocket frame to a watcher may hold.

Daphne's WebSocket (autobahn) refuses to send a message over 1 MiB, and the run consumer that
tried lost the events in it for good: a 1,000-step run's 1.4 MB deliverable went out in the
synthesis's `step.succeeded`, and the run's end with it, in one batch that never left, so the
page showed the run running forever. No frame is made longer than FRAME_CHARS here: batches
are cut into several frames, an event longer than that goes with the longest texts of its
payload shortened (and `"cut": true`; the log keeps it whole, and the page reads a whole output
from the server), and the live text so far of a step goes as its end.

Messages are JSON as `json.dumps` writes it by default (ASCII), so characters are bytes."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

FRAME_CHARS = 256 * 1024

_OPEN = '{"type": "batch", "messages": ['
_CLOSE = "]}"
_SEP = ", "
_SHORTEST = 64


def event_fitted(text: str, limit: int = FRAME_CHARS) -> str:
    """An event message (`{"type": "event", "event": {...}}`, serialized) of at most `limit`
    characters: as it is when it fits, else with its payload's strings and lists cut to a
    length that makes it fit, each saying how much was left out."""
    if len(text) <= limit:
        return text
    return _cut_to_fit(text, limit)


# Every watcher of the run in a process is forwarded the same string by the Fanout (its hash
# kept on it): a long event is parsed and cut once there, not once a watcher.
@lru_cache(maxsize=4)
def _cut_to_fit(text: str, limit: int) -> str:
    message = json.loads(text)
    event = message["event"]
    whole = event["payload"]
    event["cut"] = True
    keep = limit // 4
    while True:
        event["payload"] = _cut(whole, keep)
        fitted = json.dumps(message)
        if len(fitted) <= limit or keep <= _SHORTEST:
            return fitted
        keep //= 2


def _cut(value: Any, keep: int) -> Any:
    if isinstance(value, str) and len(value) > keep:
        return f"{value[:keep]}… [{len(value) - keep} more characters]"
    if isinstance(value, dict):
        return {key: _cut(item, keep) for key, item in value.items()}
    if isinstance(value, list):
        items = max(1, keep // _SHORTEST)
        return [_cut(item, keep) for item in value[:items]]
    return value


def frames(texts: list[str], limit: int = FRAME_CHARS) -> list[str]:
    """Messages (each fitted already) as the frames of a client that reads batches, in order:
    those that fit together in one batch frame (`{"type": "batch", "messages": [...]}`) of at
    most `limit` characters; a message alone as it is."""
    out: list[str] = []
    group: list[str] = []
    size = 0
    for text in texts:
        if group and len(_OPEN) + size + len(_SEP) + len(text) + len(_CLOSE) > limit:
            out.append(_frame(group))
            group, size = [], 0
        size += len(text) + (len(_SEP) if group else 0)
        group.append(text)
    if group:
        out.append(_frame(group))
    return out


def _frame(group: list[str]) -> str:
    return group[0] if len(group) == 1 else _OPEN + _SEP.join(group) + _CLOSE


def text_fitted(message: dict[str, Any], limit: int = FRAME_CHARS) -> dict[str, Any]:
    """A step's live text so far (`{"type": "text", "offset": 0, "text": ...}`) that fits in a
    frame: its end, at the offset where that starts, so the pieces after it join on."""
    room = limit // 2
    text = message["text"]
    if len(text) <= room:
        return message
    return {**message, "offset": message["offset"] + len(text) - room, "text": text[-room:]}
