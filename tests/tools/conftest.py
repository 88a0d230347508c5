"""A real HTTP server on 127.0.0.1 for the network tools, started in a daemon thread."""

from __future__ import annotations

import socket
import ssl
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class QuietHandler(BaseHTTPRequestHandler):
    """A handler base that keeps the test output clean and can answer in one line."""

    server: LocalServer

    def reply(self, status: int, body: bytes, content_type: str = "text/plain", **headers: str):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class LocalServer(ThreadingHTTPServer):
    # Handlers that stall wait on this; teardown sets it so no thread hangs.
    release: threading.Event

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (a timeout test) or refused the TLS handshake is the point of
        # the test, not a server failure worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError | ssl.SSLError):
            super().handle_error(request, client_address)


Serve = Callable[..., str]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """serve(Handler) starts a server and returns its base URL, http://127.0.0.1:<port>;
    serve(Handler, tls=context) serves https with that server-side context."""
    running: list[tuple[LocalServer, threading.Thread]] = []

    def start(handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None) -> str:
        server = LocalServer(("127.0.0.1", 0), handler)
        server.release = threading.Event()
        if tls is not None:
            server.socket = tls.wrap_socket(server.socket, server_side=True)
        # A short poll interval so shutdown() at teardown returns quickly.
        thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        running.append((server, thread))
        scheme = "https" if tls else "http"
        return f"{scheme}://127.0.0.1:{server.server_address[1]}"

    yield start
    for server, thread in running:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


Dns = Callable[..., list[str]]


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> Dns:
    """dns(**{name: [addresses]}) makes those names resolve so, playing a DNS server the tests
    control; other names resolve for real. Returns the list of names looked up, in order."""
    real = socket.getaddrinfo
    lookups: list[str] = []

    def install(**names: list[str]) -> list[str]:
        def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
            lookups.append(host)
            if host not in names:
                return real(host, port, *args, **kwargs)
            return [
                (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, port, 0, 0))
                if ":" in a
                else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
                for a in names[host]
            ]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        return lookups

    return install
