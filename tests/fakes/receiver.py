"""A local HTTP server that receives POSTs and counts them: the far end of an irreversible call,
where "exactly once" is measured."""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from .local_site import LocalSite, QuietHandler


class Receiver(LocalSite):
    def __init__(self, *, delay_s: float = 0.0) -> None:
        # Held before answering, after the request was read and counted: a worker killed in
        # that window has made the call without learning its outcome.
        self.delay_s = delay_s
        super().__init__()
        self.received: list[dict[str, Any]]

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.received)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.record(
                    {
                        "path": self.path,
                        "body": body.decode("utf-8", "replace"),
                        "idempotency_key": self.headers.get("Idempotency-Key", ""),
                    }
                )
                if receiver.delay_s:
                    time.sleep(receiver.delay_s)
                answer = json.dumps({"ok": True}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        return Handler
