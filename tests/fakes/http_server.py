"""What the fake model servers share: a threaded local HTTP server that records every request and
answers each one from a queue of scripted replies, in the vendor's wire format.

A vendor's fake subclasses FakeModelServer and implements `answer(http, recorded)`; `http` is the
exchange with the client (send JSON, stream server-sent events, cut the connection).
"""

from __future__ import annotations

import json
import queue
import socket
import struct
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any, Generic, TypeVar

_ids = count(1)

Reply = TypeVar("Reply")


def request_id() -> str:
    return f"req_{next(_ids):06d}"


def next_id() -> int:
    return next(_ids)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]
    received_at: float = field(default_factory=time.monotonic)

    @property
    def api_key(self) -> str:
        """The key the client sent, from x-api-key or Authorization: Bearer."""
        return self.headers.get("x-api-key") or self.headers.get("authorization", "").removeprefix(
            "Bearer "
        )


class Exchange(BaseHTTPRequestHandler):
    """One request and its answer."""

    server_fake: FakeModelServer[Any]  # set on the subclass each server makes

    def log_message(self, *args: Any) -> None:
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first, e.g. on its timeout

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length", 0))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode(errors="replace")}
        headers = {k.lower(): v for k, v in self.headers.items()}
        recorded = Recorded("POST", self.path, headers, body)
        self.server_fake._record(recorded)
        self.server_fake.answer(self, recorded)

    def send_json(
        self,
        status: int,
        payload: dict[str, Any],
        headers: dict[str, str] | None = None,
        *,
        request_id_header: str = "request-id",
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header(request_id_header, payload.get("request_id") or request_id())
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def start_events(self, headers: dict[str, str]) -> None:
        """Begin a server-sent event stream. HTTP/1.0 without content-length: closing the
        connection ends it."""
        self.send_response(200)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def write_event(self, text: str) -> None:
        self.wfile.write(text.encode())
        self.wfile.flush()

    def reset(self) -> None:
        """End the connection with a TCP reset instead of a clean close."""
        # SO_LINGER with a zero timeout makes close() send RST instead of FIN. The socket
        # closes for real only once the reader made from it is closed too.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()
        self.connection.close()


class FakeModelServer(ABC, Generic[Reply]):
    """Use as a context manager; `base_url` is what the SDK should be pointed at."""

    # Appended to the server's address in base_url (OpenAI's clients want it to end in /v1).
    path_prefix = ""

    def __init__(self, api_key: str | None) -> None:
        self.api_key = api_key
        self._requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._replies: queue.Queue[Reply] = queue.Queue()
        handler = type("Handler", (Exchange,), {"server_fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}{self.path_prefix}"

    def __enter__(self) -> FakeModelServer[Reply]:
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """How many enqueued replies no request has taken yet."""
        return self._replies.qsize()

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self._requests.append(recorded)

    def _enqueue(self, reply: Reply) -> None:
        self._replies.put(reply)

    def _take(self) -> Reply | None:
        try:
            return self._replies.get_nowait()
        except queue.Empty:
            return None

    @abstractmethod
    def answer(self, http: Exchange, recorded: Recorded) -> None: ...


def pieces(text: str, size: int) -> list[str]:
    """Text cut the way a streaming API sends it: several small deltas."""
    return [text[i : i + size] for i in range(0, len(text), size)]
