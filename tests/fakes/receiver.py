"""A local HTTP server that receives POSTs and counts them: the far end of an irreversible call,
where "exactly once" is measured."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self, *, delay_s: float = 0.0) -> None:
        # Held before answering, after the request was read and counted: a worker killed in
        # that window has made the call without learning its outcome.
        self.delay_s = delay_s
        self.received: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.received)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with receiver._lock:
                    receiver.received.append(
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
