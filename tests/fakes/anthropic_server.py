"""A local HTTP server that speaks Anthropic's Messages API, for testing the real SDK offline.

Tests enqueue replies; the server records every request (headers and JSON body) and answers
in the wire format, as one JSON body or, when the request asks for it, as an SSE stream.
"""

from __future__ import annotations

import json
import queue
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any

_ids = count(1)


@dataclass
class Recorded:
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class _Reply:
    status: int = 200
    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 10, "output_tokens": 5})
    error_type: str = ""
    error_message: str = ""
    headers: dict[str, str] = field(default_factory=dict)


class FakeAnthropic:
    """Use as a context manager; `base_url` is what the SDK should be pointed at."""

    def __init__(self, api_key: str = "test-key") -> None:
        self.api_key = api_key
        self.requests: list[Recorded] = []
        self._replies: queue.Queue[_Reply] = queue.Queue()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeAnthropic:
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- scripting ---------------------------------------------------------------------------
    def enqueue_text(self, text: str, *, stop_reason: str = "end_turn", **usage: int) -> None:
        self._replies.put(
            _Reply(
                content=[{"type": "text", "text": text}],
                stop_reason=stop_reason,
                usage=usage or {"input_tokens": 10, "output_tokens": 5},
            )
        )

    def enqueue_json(self, data: Any, **usage: int) -> None:
        self.enqueue_text(json.dumps(data), **usage)

    def enqueue_tool_use(
        self, name: str, arguments: dict[str, Any], *, text: str = "", **usage: int
    ) -> None:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content.append(
            {"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": name, "input": arguments}
        )
        self._replies.put(
            _Reply(
                content=content,
                stop_reason="tool_use",
                usage=usage or {"input_tokens": 10, "output_tokens": 5},
            )
        )

    def enqueue_error(
        self, status: int, error_type: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        self._replies.put(
            _Reply(
                status=status, error_type=error_type, error_message=message, headers=headers or {}
            )
        )

    # --- wire format -------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(Recorded(dict(self.headers.items()), body))
                if self.path.split("?")[0] != "/v1/messages":
                    return self._error(404, "not_found_error", f"no route {self.path}")
                key = self.headers.get("x-api-key") or self.headers.get(
                    "authorization", ""
                ).removeprefix("Bearer ")
                if key != fake.api_key:
                    return self._error(401, "authentication_error", "invalid x-api-key")
                try:
                    reply = fake._replies.get_nowait()
                except queue.Empty:
                    return self._error(500, "api_error", "the fake server has no reply queued")
                if reply.status != 200:
                    return self._error(
                        reply.status, reply.error_type, reply.error_message, reply.headers
                    )
                message = {
                    "id": f"msg_{next(_ids):06d}",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "unknown"),
                    "content": reply.content,
                    "stop_reason": reply.stop_reason,
                    "stop_sequence": None,
                    "usage": reply.usage,
                }
                if body.get("stream"):
                    return self._stream(message)
                self._send(200, message)

            def _send(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", f"req_{next(_ids):06d}")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _error(
                self,
                status: int,
                error_type: str,
                message: str,
                headers: dict[str, str] | None = None,
            ) -> None:
                self._send(
                    status,
                    {"type": "error", "error": {"type": error_type, "message": message}},
                    headers,
                )

            def _stream(self, message: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()

                def event(name: str, data: dict[str, Any]) -> None:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

                start = dict(
                    message,
                    content=[],
                    stop_reason=None,
                    usage={"input_tokens": message["usage"]["input_tokens"], "output_tokens": 0},
                )
                event("message_start", {"type": "message_start", "message": start})
                for index, block in enumerate(message["content"]):
                    if block["type"] == "text":
                        event(
                            "content_block_start",
                            {
                                "type": "content_block_start",
                                "index": index,
                                "content_block": {"type": "text", "text": ""},
                            },
                        )
                        for piece in [
                            block["text"][i : i + 16] for i in range(0, len(block["text"]), 16)
                        ]:
                            event(
                                "content_block_delta",
                                {
                                    "type": "content_block_delta",
                                    "index": index,
                                    "delta": {"type": "text_delta", "text": piece},
                                },
                            )
                    else:
                        event(
                            "content_block_start",
                            {
                                "type": "content_block_start",
                                "index": index,
                                "content_block": dict(block, input={}),
                            },
                        )
                        event(
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {
                                    "type": "input_json_delta",
                                    "partial_json": json.dumps(block["input"]),
                                },
                            },
                        )
                    event("content_block_stop", {"type": "content_block_stop", "index": index})
                event(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                        "usage": {"output_tokens": message["usage"]["output_tokens"]},
                    },
                )
                event("message_stop", {"type": "message_stop"})
                self.wfile.flush()

        return Handler
