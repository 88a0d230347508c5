"""fetch_url against a real HTTP server on 127.0.0.1, which the tests allow through net_allow."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from planner_ui.core.errors import ToolError
from planner_ui.tools import ToolContext
from planner_ui.tools.fetch import MAX_REDIRECTS, FetchUrl

from .conftest import QuietHandler, Serve

LOCAL = ["127.0.0.1"]


class Handler(QuietHandler):
    requests: list[tuple[str, str, str]] = []  # path, Host, User-Agent

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        Handler.requests.append(
            (self.path, self.headers.get("Host", ""), self.headers.get("User-Agent", ""))
        )
        path, _, query = self.path.partition("?")
        if path == "/hello":
            self.reply(200, b"hello, agent", "text/plain; charset=utf-8")
        elif path == "/sixteen":
            self.reply(200, b"0123456789abcdef")
        elif path == "/latin1":
            self.reply(200, "café".encode("latin-1"), "text/plain; charset=iso-8859-1")
        elif path == "/bogus-charset":
            self.reply(200, b"hello", "text/plain; charset=no-such-codec")
        elif path == "/slow":
            self.server.release.wait(timeout=10)
            self.reply(200, b"too late")
        elif path == "/garbage":
            self.wfile.write(b"this is not HTTP\r\n\r\n")
        elif path == "/redirect":
            # /redirect?to=<location>&status=<code>
            params = parse_qs(query, keep_blank_values=True)
            status = int(params.get("status", ["302"])[0])
            self.reply(status, b"moved", Location=params["to"][0])
        elif path == "/loop":
            self.reply(302, b"again", Location="/loop")
        else:
            self.send_error(404)


@pytest.fixture
def server_url(serve: Serve) -> str:
    Handler.requests = []
    return serve(Handler)


def fetch(url: str, **settings: object) -> str:
    settings.setdefault("net_allow", LOCAL)
    ctx = ToolContext(run_id=1, step_id="fetch", workspace=Path("/nonexistent"), settings=settings)
    return FetchUrl().call({"url": url}, ctx)


def fetch_error(url: str, **settings: object) -> str:
    with pytest.raises(ToolError) as caught:
        fetch(url, **settings)
    return str(caught.value)


def test_a_200_answer_returns_status_and_body(server_url: str) -> None:
    url = f"{server_url}/hello"
    assert fetch(url) == f"HTTP 200 from {url}\n\nhello, agent"
    host = urlsplit(server_url).netloc
    assert Handler.requests == [("/hello", host, "agentsite/0.1")]


def test_the_query_string_is_sent(server_url: str) -> None:
    fetch(f"{server_url}/hello?q=a%20b&n=1")
    assert Handler.requests[0][0] == "/hello?q=a%20b&n=1"


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
    assert fetch_error("http://127.0.0.1:1/") == (
        "fetch_url: could not fetch http://127.0.0.1:1/: Connection refused"
    )


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "javascript:alert(1)", "127.0.0.1/x"]
)
def test_other_schemes_are_refused_before_any_request(server_url: str, url: str) -> None:
    assert fetch_error(url) == f"fetch_url: only http and https URLs are allowed, not {url!r}"
    assert Handler.requests == []


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
    assert fetch_error(url) == (
        f"fetch_url: could not fetch {url}: the answer is not valid HTTP (BadStatusLine)"
    )


def test_a_space_in_the_url_is_refused_before_any_request(server_url: str) -> None:
    url = f"{server_url}/a page"
    assert fetch_error(url) == (
        f"fetch_url: invalid URL {url!r}: spaces and control characters must be %-encoded"
    )
    assert Handler.requests == []


def test_a_port_that_is_not_a_number_is_an_invalid_url(server_url: str) -> None:
    url = f"{server_url}:port/"
    assert fetch_error(url).startswith(f"fetch_url: invalid URL {url!r}: Port could not be cast")


# The net policy applies to every request, and to every hop of a redirect


def test_without_net_allow_the_local_server_is_refused_and_never_reached(server_url: str) -> None:
    url = f"{server_url}/hello"
    assert fetch_error(url, net_allow=[]) == (
        f"fetch_url: refused {url}: 127.0.0.1 is a loopback address; to allow it, "
        "set AGENTSITE_TOOL_NET_ALLOW to include '127.0.0.1'"
    )
    assert Handler.requests == []


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_followed_and_the_final_url_reported(server_url: str, status: int) -> None:
    url = f"{server_url}/redirect?to=/hello&status={status}"
    assert fetch(url) == f"HTTP 200 from {server_url}/hello\n\nhello, agent"
    assert [path for path, _, _ in Handler.requests] == [
        f"/redirect?to=/hello&status={status}",
        "/hello",
    ]


@pytest.mark.parametrize(
    ("location", "refused"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local"),
        ("http://10.0.0.1/admin", "10.0.0.1 is a private"),
        ("http://[::1]:8080/", "::1 is a loopback"),
        ("http://localhost:9/", "localhost resolves to 127.0.0.1, a loopback"),
    ],
)
def test_a_redirect_to_a_refused_address_is_refused(
    server_url: str, location: str, refused: str
) -> None:
    # Only this server's own port is allowed, so even localhost (127.0.0.1 on another port) and
    # the same address's other services stay refused.
    port = urlsplit(server_url).port
    message = fetch_error(f"{server_url}/redirect?to={location}", net_allow=[f"127.0.0.1:{port}"])
    assert message.startswith(f"fetch_url: refused {location}: {refused} address; to allow it")
    assert len(Handler.requests) == 1


def test_a_redirect_to_another_scheme_is_refused(server_url: str) -> None:
    assert fetch_error(f"{server_url}/redirect?to=file:///etc/passwd") == (
        "fetch_url: only http and https URLs are allowed, not 'file:///etc/passwd'"
    )


def test_a_redirect_loop_stops_after_the_limit(server_url: str) -> None:
    url = f"{server_url}/loop"
    assert fetch_error(url) == f"fetch_url: {url} redirected more than {MAX_REDIRECTS} times"
    assert len(Handler.requests) == MAX_REDIRECTS + 1


def test_a_redirect_without_location_is_an_error_status(server_url: str) -> None:
    url = f"{server_url}/redirect?to=&status=302"
    assert fetch_error(url) == f"fetch_url: {url} answered HTTP 302 Found"
