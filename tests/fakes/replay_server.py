"""A local OpenAI-compatible server that answers with replies a real model once gave.

    with ReplayOpenAI(FIXTURES / "qwen2.5-coder-1.5b-llamacpp.jsonl") as server:
        server.enqueue_text("…")   # what no recording answers: scripted, as with FakeOpenAI
        ...
        server.answered_by          # per request: the recorded line that answered it, or None

The transcript holds one JSON object a line, one per HTTP exchange recorded by a logging proxy
(tests/fixtures/real-models/README.md): `request` is the JSON body agentsite sent, `reply` the
body exactly as the server sent it (raw `data: …` lines for a streamed reply).

How a request finds its recorded reply. agentsite's prompts change (a tool list, a rule, the
outputs of earlier steps a step is given), so requests are not compared whole. Each one is
read for who asks and about what, from its first user message:

- the planner: the `<task>` block of a message offering "Tools the steps may be granted";
- an executor: the step's `<instruction>` block;
- the synthesizer: the `<task>` block of a message with "Step outputs".

together with how many assistant turns the conversation already holds (0 for a first request,
1 after one reply and its tool results or a correction). A request is answered with the first
recorded exchange, not used yet, with the same three: the recorded reply, byte for byte, even
when the rest of the request (an earlier step's output in the context, say) now differs. A
request no recording answers (a follow-up with tool results, which the recorded runs never
made) takes the next scripted reply queued with FakeOpenAI's enqueue_* methods, and without one
gets a 500 saying what was asked. Every request is checked against the rules of the real API
first (FakeOpenAI's), so a history our provider maps wrongly fails here as it would there.
"""

from __future__ import annotations

import html
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .http_server import Exchange, Recorded, request_id
from .openai_rules import invalid
from .openai_server import FakeOpenAI

_BLOCK = r"<{tag}>\n?(.*?)\n?</{tag}>"


@dataclass(frozen=True)
class RecordedExchange:
    line: int  # 0-based line of the transcript
    key: tuple[str, str, int]
    status: int
    reply: str
    streamed: bool


def conversation_key(body: dict[str, Any]) -> tuple[str, str, int]:
    """(who asks, about what, assistant turns so far) for a chat completions request body."""
    messages = body.get("messages") or []
    first_user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    turns = sum(1 for m in messages if m.get("role") == "assistant")
    if instruction := _block(first_user, "instruction"):
        return ("executor", instruction, turns)
    task = _block(first_user, "task")
    if "Tools the steps may be granted" in first_user:
        return ("planner", task, turns)
    if "Step outputs" in first_user:
        return ("synthesizer", task, turns)
    return ("other", first_user, turns)


def _block(text: str, tag: str) -> str:
    match = re.search(_BLOCK.format(tag=tag), text, re.S)
    return html.unescape(match.group(1)).strip() if match else ""


def load_transcript(path: Path | str) -> list[RecordedExchange]:
    exchanges = []
    for line, text in enumerate(Path(path).read_text().splitlines()):
        if not text.strip():
            continue
        data = json.loads(text)
        exchanges.append(
            RecordedExchange(
                line=line,
                key=conversation_key(data["request"]),
                status=data["status"],
                reply=data["reply"],
                streamed=bool(data["request"].get("stream")),
            )
        )
    return exchanges


class ReplayOpenAI(FakeOpenAI):
    """FakeOpenAI that answers from a transcript first (see the module's docstring)."""

    def __init__(
        self, transcript: Path | str, *, lines: set[int] | None = None, api_key: str | None = None
    ) -> None:
        super().__init__(api_key=api_key)
        recorded = load_transcript(transcript)
        self._unused = [e for e in recorded if lines is None or e.line in lines]
        self._replay_lock = threading.Lock()
        # Per request, in arrival order: the transcript line that answered it, or None.
        self.answered_by: list[int | None] = []

    def __enter__(self) -> ReplayOpenAI:
        super().__enter__()
        return self

    def answer(self, http: Exchange, recorded: Recorded) -> None:
        body = recorded.body
        if recorded.path.split("?")[0] != "/v1/chat/completions" or invalid(body):
            with self._replay_lock:
                self.answered_by.append(None)
            return super().answer(http, recorded)  # says what is wrong, as the API would
        key = conversation_key(body)
        with self._replay_lock:
            exchange = next((e for e in self._unused if e.key == key), None)
            if exchange is not None:
                self._unused.remove(exchange)
            self.answered_by.append(exchange.line if exchange is not None else None)
        if exchange is None:
            return super().answer(http, recorded)
        if exchange.streamed != bool(body.get("stream")):
            raise AssertionError(
                f"transcript line {exchange.line} was streamed={exchange.streamed}, but this "
                "request asks otherwise: its reply cannot be sent as recorded"
            )
        if exchange.streamed:
            http.start_events(
                {
                    "content-type": "text/event-stream",
                    "cache-control": "no-cache",
                    "x-request-id": request_id(),
                }
            )
            http.write_event(exchange.reply)
            return
        data = exchange.reply.encode()
        http.send_response(exchange.status)
        http.send_header("content-type", "application/json")
        http.send_header("content-length", str(len(data)))
        http.end_headers()
        http.wfile.write(data)

    @property
    def unused(self) -> list[int]:
        """The transcript lines no request has been answered with yet."""
        with self._replay_lock:
            return [e.line for e in self._unused]
