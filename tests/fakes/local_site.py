"""What the tests' small HTTP servers share: a threaded server on 127.0.0.1 with a port of its
own, started and stopped as a context manager, recording what it receives under a lock.
A subclass says how it answers in `_handler()`."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class LocalSite(ABC):
    def __init__(self) -> None:
        self.received: list[Any] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def record(self, item: Any) -> None:
        with self._lock:
            self.received.append(item)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @abstractmethod
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class; it reaches this site through a closure."""


class QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass
