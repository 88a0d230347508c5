"""A local HTTP server that speaks Anthropic's Messages API, for testing the real SDK offline.

    with FakeAnthropic() as server:
        server.enqueue_text("Hi")
        client = anthropic.Anthropic(api_key="test-key", base_url=server.base_url)
        ...
        server.requests[0].body["messages"]

Tests enqueue replies; the server records every request (lower-cased headers and JSON body)
and answers POST /v1/messages in the wire format: one JSON body, or an SSE stream when the
request says "stream": true (and POST /v1/messages/count_tokens, with a count). Streams can
also fail the ways real ones do: an error event after the stream has started, a stall, or a
connection that closes or resets early. Like the real API it refuses a wrong key (401), a
missing anthropic-version header, and a conversation whose tool_use blocks are not answered by
tool_result blocks in the next user turn (400), so a mapping bug fails here as it would there.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

from .http_server import Exchange, FakeModelServer, Recorded, next_id, pieces, request_id

__all__ = ["FakeAnthropic", "Recorded"]

# Statuses the SDK retries (see _should_retry in anthropic/_base_client.py).
_RETRIED = {408, 409, 429}


@dataclass
class _Reply:
    status: int = 200
    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    usage: dict[str, int] = field(default_factory=dict)
    error_type: str = ""
    error_message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    # Streaming only: pause after the first content delta; stop before message_delta, by
    # closing the connection ("close") or resetting it ("reset"); or send this error event
    # instead of the content blocks' ends.
    stall_s: float = 0.0
    cut: str = ""
    stream_error: dict[str, str] | None = None


def _usage(usage: dict[str, int]) -> dict[str, int]:
    return {"input_tokens": 10, "output_tokens": 5, **usage}


class FakeAnthropic(FakeModelServer[_Reply]):
    """Use as a context manager; `base_url` is what the SDK should be pointed at."""

    def __init__(self, api_key: str = "test-key") -> None:
        super().__init__(api_key)
        # What POST /v1/messages/count_tokens answers; None: a quarter of the body's length.
        self.input_count: int | None = None

    def __enter__(self) -> FakeAnthropic:
        super().__enter__()
        return self

    # --- scripting ---------------------------------------------------------------------------
    def enqueue_reply(
        self,
        content: list[dict[str, Any]],
        *,
        stop_reason: str = "end_turn",
        delay_s: float = 0.0,
        stall_s: float = 0.0,
        cut: str = "",
        **usage: int,
    ) -> None:
        """Any content blocks, as the API would return them. Usage defaults to 10 in, 5 out;
        pass input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens.
        `delay_s` holds the whole answer back, to test timeouts.

        When streamed: `stall_s` pauses after the first content delta, to test a stream that
        stalls; `cut="close"` or `cut="reset"` ends the connection after the content blocks,
        before message_delta and message_stop, cleanly or with a TCP reset."""
        if cut not in ("", "close", "reset"):
            raise ValueError(f"cut must be 'close' or 'reset', not {cut!r}")
        self._enqueue(
            _Reply(
                content=content,
                stop_reason=stop_reason,
                usage=_usage(usage),
                delay_s=delay_s,
                stall_s=stall_s,
                cut=cut,
            )
        )

    def enqueue_text(self, text: str, *, stop_reason: str = "end_turn", **options: Any) -> None:
        """One text block; `options` as for enqueue_reply (timing, cut, usage)."""
        self.enqueue_reply([{"type": "text", "text": text}], stop_reason=stop_reason, **options)

    def enqueue_json(self, data: Any, **usage: int) -> None:
        """A structured-output reply: the JSON document is the reply's only text block."""
        self.enqueue_text(json.dumps(data), **usage)

    def enqueue_tool_use(
        self, name: str, arguments: dict[str, Any], *, text: str = "", **usage: int
    ) -> str:
        """A reply that calls one tool, optionally after some text; returns the tool_use id."""
        tool_use_id = f"toolu_{next_id():06d}"
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content.append({"type": "tool_use", "id": tool_use_id, "name": name, "input": arguments})
        self.enqueue_reply(content, stop_reason="tool_use", **usage)
        return tool_use_id

    def enqueue_error(
        self, status: int, error_type: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        """An error answer, e.g. (529, "overloaded_error", "Overloaded").

        For statuses the SDK retries, the answer carries retry-after-ms: 1 unless `headers`
        says otherwise, so SDK retries in tests are immediate. (retry-after: 0 would not do:
        the SDK ignores a wait of zero and falls back to its 0.5-8 s exponential backoff.)
        """
        headers = dict(headers or {})
        retried = status in _RETRIED or status >= 500
        if retried and not {"retry-after", "retry-after-ms"} & {h.lower() for h in headers}:
            headers["retry-after-ms"] = "1"
        self._enqueue(
            _Reply(status=status, error_type=error_type, error_message=message, headers=headers)
        )

    def enqueue_stream_error(
        self, error_type: str = "overloaded_error", message: str = "Overloaded", *, text: str = ""
    ) -> None:
        """A stream that starts (200, message_start), optionally streams `text`, then sends
        `event: error` and ends, as the API does when it fails mid-reply. The SDK does not
        retry it. Only a streaming request may take this reply."""
        content = [{"type": "text", "text": text}] if text else []
        self._enqueue(
            _Reply(
                content=content,
                usage=_usage({}),
                stream_error={"type": error_type, "message": message},
            )
        )

    # --- wire format -------------------------------------------------------------------------
    def answer(self, http: Exchange, recorded: Recorded) -> None:
        body = recorded.body
        path = recorded.path.split("?")[0]
        if path not in ("/v1/messages", "/v1/messages/count_tokens"):
            return _error(http, 404, "not_found_error", f"Not found: {recorded.path}")
        if not recorded.api_key:
            return _error(http, 401, "authentication_error", "x-api-key header is required")
        if recorded.api_key != self.api_key:
            return _error(http, 401, "authentication_error", "invalid x-api-key")
        if "anthropic-version" not in recorded.headers:
            return _error(
                http, 400, "invalid_request_error", "anthropic-version: header is required"
            )
        if path == "/v1/messages/count_tokens":
            # The server's own count: a quarter of the request's characters, as the offline
            # model counts, unless a test set another.
            counted = self.input_count or math.ceil(len(json.dumps(body)) / 4)
            return http.send_json(200, {"input_tokens": counted})
        if problem := _invalid(body):
            return _error(http, 400, "invalid_request_error", problem)
        reply = self._take()
        if reply is None:
            # x-should-retry: false, or the SDK would retry a 500 and ask again.
            return _error(
                http,
                500,
                "api_error",
                "FakeAnthropic has no reply queued for this request: "
                "call enqueue_text/enqueue_json/enqueue_tool_use/enqueue_error first",
                {"x-should-retry": "false"},
            )
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.status != 200:
            return _error(http, reply.status, reply.error_type, reply.error_message, reply.headers)
        message = {
            "id": f"msg_{next_id():06d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": reply.content,
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": reply.usage,
        }
        if body.get("stream"):
            return _stream(http, message, reply)
        if reply.stream_error or reply.stall_s or reply.cut:
            return _error(
                http,
                400,
                "invalid_request_error",
                "FakeAnthropic: this reply was enqueued for a streaming request",
            )
        http.send_json(200, message)


def _error(
    http: Exchange,
    status: int,
    error_type: str,
    message: str,
    headers: dict[str, str] | None = None,
) -> None:
    http.send_json(
        status,
        {
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": request_id(),
        },
        headers,
    )


def _stream(http: Exchange, message: dict[str, Any], reply: _Reply) -> None:
    http.start_events(
        {
            "content-type": "text/event-stream",
            "cache-control": "no-cache",
            "request-id": request_id(),
        }
    )
    events = _sse_events(message)
    if reply.stream_error:
        # The error takes the place of everything from the first block's end on.
        end = next(
            i
            for i, (name, _) in enumerate(events)
            if name in ("content_block_stop", "message_delta")
        )
        events = [*events[:end], ("error", {"type": "error", "error": reply.stream_error})]
    elif reply.cut:
        events = [e for e in events if e[0] not in ("message_delta", "message_stop")]
    stalled = False
    for name, data in events:
        http.write_event(f"event: {name}\ndata: {json.dumps(data)}\n\n")
        if reply.stall_s and name == "content_block_delta" and not stalled:
            stalled = True
            time.sleep(reply.stall_s)
    if reply.cut == "reset":
        http.reset()


def _invalid(body: dict[str, Any]) -> str:
    """The first rule of the real API this request breaks, or "" when it breaks none."""
    if not isinstance(body.get("model"), str):
        return "model: Field required"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    for index, message in enumerate(messages):
        if message.get("role") not in ("user", "assistant"):
            return f"messages.{index}.role: Input should be 'user' or 'assistant'"
        content = message.get("content")
        if not content:
            return f"messages.{index}: all messages must have non-empty content"
        blocks = content if isinstance(content, list) else []
        if any(b.get("type") == "text" and not b.get("text") for b in blocks):
            return f"messages.{index}: text content blocks must be non-empty"
        tool_uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if message["role"] == "assistant" and tool_uses:
            following = messages[index + 1]["content"] if index + 1 < len(messages) else []
            answered = {
                b.get("tool_use_id")
                for b in (following if isinstance(following, list) else [])
                if b.get("type") == "tool_result"
            }
            if missing := [i for i in tool_uses if i not in answered]:
                return (
                    f"messages.{index + 1}: `tool_use` ids were found without `tool_result` "
                    f"blocks immediately after: {', '.join(missing)}. Each `tool_use` block "
                    "must have a corresponding `tool_result` block in the next message."
                )
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if results:
            previous = messages[index - 1] if index else {}
            previous_content = previous.get("content")
            asked = {
                b.get("id")
                for b in (previous_content if isinstance(previous_content, list) else [])
                if b.get("type") == "tool_use"
            }
            if message["role"] != "user" or previous.get("role") != "assistant":
                return f"messages.{index}: tool_result blocks must be in a user message"
            if unknown := [i for i in results if i not in asked]:
                return (
                    f"messages.{index}.content: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {', '.join(map(str, unknown))}. Each "
                    "`tool_result` block must have a corresponding `tool_use` block in the "
                    "previous message."
                )
    return ""


def _sse_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The same message as the API streams it: start, one start/deltas/stop per content
    block, then the stop reason and final usage, then stop."""
    usage = message["usage"]
    # As the API does: message_start carries the prompt's figures (cache ones included) and a
    # first output count; message_delta carries only the cumulative output_tokens, and the
    # SDK keeps message_start's figures for the fields it leaves out.
    start_usage = {**usage, "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    **message,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            empty = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces(block["text"], 16)]
        elif block["type"] == "tool_use":
            empty = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in pieces(json.dumps(block["input"]), 16)
            ]
        else:
            empty, deltas = block, []
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": empty},
            )
        )
        events += [
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
            for delta in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events
