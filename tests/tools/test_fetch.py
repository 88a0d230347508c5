"""fetch_url against a real HTTP server on 127.0.0.1, started by the test in a daemon thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from planner_ui.core.errors import ToolError
from planner_ui.tools import ToolContext
from planner_ui.tools.fetch import FetchUrl

# Set by the test that needs a slow answer; the fixture sets it at teardown so no thread hangs.
RELEASE_SLOW = threading.Event()


class Handler(BaseHTTPRequestHandler):
    user_agents: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        Handler.user_agents.append(self.headers.get("User-Agent", ""))
        if self.path == "/hello":
            self.reply(b"hello, agent", "text/plain; charset=utf-8")
        elif self.path == "/sixteen":
            self.reply(b"0123456789abcdef", "text/plain")
        elif self.path == "/latin1":
            self.reply("café".encode("latin-1"), "text/plain; charset=iso-8859-1")
        elif self.path == "/bogus-charset":
            self.reply(b"hello", "text/plain; charset=no-such-codec")
        elif self.path == "/slow":
            RELEASE_SLOW.wait(timeout=10)
            self.reply(b"too late", "text/plain")
        elif self.path == "/garbage":
            self.wfile.write(b"this is not HTTP\r\n\r\n")
        else:
            self.send_error(404)

    def reply(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep the test output quiet


@pytest.fixture
def server_url() -> Iterator[str]:
    RELEASE_SLOW.clear()
    Handler.user_agents = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # A short poll interval so shutdown() at teardown returns quickly.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        RELEASE_SLOW.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def fetch(url: str, **settings: object) -> str:
    ctx = ToolContext(run_id=1, step_id="fetch", workspace=Path("/nonexistent"), settings=settings)
    return FetchUrl().call({"url": url}, ctx)


def fetch_error(url: str, **settings: object) -> str:
    with pytest.raises(ToolError) as caught:
        fetch(url, **settings)
    return str(caught.value)


def test_a_200_answer_returns_status_and_body(server_url: str) -> None:
    url = f"{server_url}/hello"
    assert fetch(url) == f"HTTP 200 from {url}\n\nhello, agent"
    assert Handler.user_agents == ["agentsite/0.1"]


def test_the_declared_charset_is_used_to_decode(server_url: str) -> None:
    url = f"{server_url}/latin1"
    assert fetch(url) == f"HTTP 200 from {url}\n\ncafé"


def test_a_body_over_the_size_cap_is_truncated_with_a_note(server_url: str) -> None:
    url = f"{server_url}/sixteen"
    assert fetch(url, fetch_max_bytes=10) == (
        f"HTTP 200 from {url}\n\n0123456789\n[truncated at 10 bytes]"
    )


def test_a_body_exactly_at_the_cap_has_no_note(server_url: str) -> None:
    url = f"{server_url}/sixteen"
    assert fetch(url, fetch_max_bytes=16) == f"HTTP 200 from {url}\n\n0123456789abcdef"


def test_an_http_error_status_is_reported_with_its_reason(server_url: str) -> None:
    url = f"{server_url}/missing"
    assert fetch_error(url) == f"fetch_url: {url} answered HTTP 404 Not Found"


def test_a_slow_server_hits_the_timeout(server_url: str) -> None:
    url = f"{server_url}/slow"
    assert fetch_error(url, fetch_timeout_s=0.2) == f"fetch_url: could not fetch {url}: timed out"


def test_a_refused_connection_is_reported() -> None:
    # Port 1 on loopback has no listener in any sane test environment.
    message = fetch_error("http://127.0.0.1:1/")
    assert message.startswith("fetch_url: could not fetch http://127.0.0.1:1/: ")
    assert "refused" in message.lower()


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "javascript:alert(1)", "127.0.0.1/x"]
)
def test_other_schemes_are_refused_before_any_request(server_url: str, url: str) -> None:
    assert fetch_error(url) == f"fetch_url: only http and https URLs are allowed, not {url!r}"
    assert Handler.user_agents == []


def test_a_missing_url_is_named() -> None:
    ctx = ToolContext(run_id=1, step_id="fetch", workspace=Path("/nonexistent"))
    with pytest.raises(ToolError) as caught:
        FetchUrl().call({"address": "http://127.0.0.1/"}, ctx)
    assert str(caught.value) == "fetch_url: invalid arguments: 'url' field required"


def test_an_unknown_charset_falls_back_instead_of_crashing(server_url: str) -> None:
    url = f"{server_url}/bogus-charset"
    assert fetch(url) == f"HTTP 200 from {url}\n\nhello"


def test_a_server_that_does_not_speak_http_is_a_tool_error(server_url: str) -> None:
    url = f"{server_url}/garbage"
    assert fetch_error(url).startswith(f"fetch_url: could not fetch {url}: ")


@pytest.mark.parametrize("path", ["/a page", ":port/"])
def test_a_malformed_url_is_a_tool_error(server_url: str, path: str) -> None:
    url = f"{server_url}{path}"
    assert fetch_error(url).startswith(f"fetch_url: could not fetch {url}: ")
