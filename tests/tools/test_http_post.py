"""http_post against a real HTTP server on 127.0.0.1 that records every request it receives."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ArgumentsInvalid, ToolError
from planner_ui.tools import ToolContext
from planner_ui.tools.http_post import HttpPost

from .conftest import QuietHandler, Serve


@dataclasses.dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class Handler(QuietHandler):
    received: list[Received] = []

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Handler.received.append(Received(self.path, dict(self.headers), body))
        path = self.path.partition("?")[0]
        if path == "/orders":
            self.reply(201, b'{"id": 7}', "application/json")
        elif path == "/broken":
            self.reply(500, b"database is down")
        elif path == "/moved":
            self.reply(303, b"see elsewhere", Location="/orders/7")
        elif path == "/big":
            self.reply(200, b"x" * 50)
        elif path == "/slow":
            self.server.release.wait(timeout=10)
            self.reply(200, b"too late")
        else:
            self.send_error(404)


@pytest.fixture
def server_url(serve: Serve) -> str:
    Handler.received = []
    return serve(Handler)


def context(idempotency_key: str = "", **settings: Any) -> ToolContext:
    settings.setdefault("net_allow", ["127.0.0.1"])
    return ToolContext(
        run_id=1,
        step_id="post",
        workspace=Path("/nonexistent"),
        settings=settings,
        idempotency_key=idempotency_key,
    )


def post(arguments: dict[str, Any], ctx: ToolContext | None = None) -> str:
    return HttpPost().call(arguments, ctx or context())


def post_error(arguments: dict[str, Any], ctx: ToolContext | None = None) -> str:
    with pytest.raises(ToolError) as caught:
        post(arguments, ctx)
    return str(caught.value)


def test_the_tool_sends_so_it_is_irreversible() -> None:
    assert HttpPost.effect is Effect.SEND
    assert HttpPost.irreversible is True and HttpPost().irreversible is True


def test_a_json_post_arrives_with_its_headers_and_the_answer_comes_back(server_url: str) -> None:
    body = json.dumps({"item": "café", "quantity": 2})
    result = post({"url": f"{server_url}/orders", "body": body}, context("run-1-step-a-call-1"))

    assert result == 'HTTP 201 Created\n{"id": 7}'
    [received] = Handler.received
    assert received.path == "/orders"
    assert received.body == body.encode("utf-8")
    assert received.headers["Content-Type"] == "application/json"
    assert received.headers["Content-Length"] == str(len(body.encode("utf-8")))
    assert received.headers["Idempotency-Key"] == "run-1-step-a-call-1"
    assert received.headers["User-Agent"] == "agentsite/0.1"
    assert received.headers["Host"] == server_url.removeprefix("http://")


def test_without_an_idempotency_key_no_header_is_sent(server_url: str) -> None:
    post({"url": f"{server_url}/orders", "body": "{}"})
    assert "Idempotency-Key" not in Handler.received[0].headers


def test_another_content_type_sends_the_body_as_it_is(server_url: str) -> None:
    arguments = {
        "url": f"{server_url}/orders?source=agent",
        "body": "name=caf%C3%A9&n=2",
        "content_type": "application/x-www-form-urlencoded",
    }
    assert post(arguments).startswith("HTTP 201 Created\n")
    [received] = Handler.received
    assert received.path == "/orders?source=agent"
    assert received.body == b"name=caf%C3%A9&n=2"
    assert received.headers["Content-Type"] == "application/x-www-form-urlencoded"


def test_an_error_status_is_a_result_the_model_can_read(server_url: str) -> None:
    assert post({"url": f"{server_url}/broken", "body": "{}"}) == (
        "HTTP 500 Internal Server Error\ndatabase is down"
    )


def test_a_redirect_is_reported_and_not_followed(server_url: str) -> None:
    assert post({"url": f"{server_url}/moved", "body": "{}"}) == (
        "HTTP 303 See Other\nLocation: /orders/7 (not followed)\nsee elsewhere"
    )
    assert [r.path for r in Handler.received] == ["/moved"]


def test_the_answer_is_capped_by_fetch_max_bytes(server_url: str) -> None:
    ctx = context(fetch_max_bytes=10)
    assert post({"url": f"{server_url}/big", "body": "{}"}, ctx) == (
        "HTTP 200 OK\nxxxxxxxxxx\n[truncated at 10 bytes]"
    )


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "application/ld+json"]
)
def test_a_json_content_type_needs_a_json_body(server_url: str, content_type: str) -> None:
    arguments = {"url": f"{server_url}/orders", "body": "{'item': 1}", "content_type": content_type}
    assert post_error(arguments) == (
        "http_post: the body is not valid JSON (Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1)); send JSON, or set content_type to what the body is"
    )
    assert Handler.received == []


def test_a_body_that_is_not_json_is_refused_with_the_schema_naming_the_body() -> None:
    """Before a person is asked to approve it (or approves an edit that broke it)."""
    arguments = {"url": "https://example.com/orders", "body": "{oops"}
    with pytest.raises(ArgumentsInvalid) as refused:
        HttpPost().parse(arguments)
    assert list(refused.value.problems) == ["body"]
    assert str(refused.value).startswith("http_post: the body is not valid JSON")
    HttpPost().parse({**arguments, "content_type": "text/plain"})


def test_a_body_over_post_max_bytes_is_refused_before_sending(server_url: str) -> None:
    body = json.dumps(
        "é" * 6, ensure_ascii=False
    )  # 14 bytes: the limit counts UTF-8 bytes, not characters
    assert post_error(
        {"url": f"{server_url}/orders", "body": body}, context(post_max_bytes=13)
    ) == ("http_post: the body is 14 bytes, over the 13 limit")
    assert post({"url": f"{server_url}/orders", "body": body}, context(post_max_bytes=14))
    assert len(Handler.received) == 1


def test_without_net_allow_the_local_server_is_refused_and_nothing_is_sent(
    server_url: str,
) -> None:
    url = f"{server_url}/orders"
    assert post_error({"url": url, "body": "{}"}, context(net_allow=[])) == (
        f"http_post: refused {url}: 127.0.0.1 is a loopback address; to allow it, "
        "set AGENTSITE_TOOL_NET_ALLOW to include '127.0.0.1'"
    )
    assert Handler.received == []


def test_a_refused_connection_says_nothing_was_sent() -> None:
    assert post_error({"url": "http://127.0.0.1:1/", "body": "{}"}) == (
        "http_post: could not connect to http://127.0.0.1:1/: Connection refused; nothing was sent"
    )


def test_a_timeout_says_the_request_may_have_arrived(server_url: str) -> None:
    url = f"{server_url}/slow"
    assert post_error({"url": url, "body": "{}"}, context(post_timeout_s=0.2)) == (
        f"http_post: no usable answer from {url}: timed out; "
        "the server may have received the request"
    )
    assert len(Handler.received) == 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"url": "http://x/"}, "http_post: invalid arguments: 'body' field required"),
        (
            {"url": "http://x/", "body": "{}", "content_type": "text/plain\r\nX-Evil: 1"},
            "http_post: invalid arguments: 'content_type' string should match pattern "
            "'^[^\\r\\n]*$'",
        ),
        (
            {"url": "http://x/", "body": "{}", "content_type": ""},
            "http_post: invalid arguments: 'content_type' string should have at least 1 character",
        ),
        (
            {"url": "ftp://x/", "body": "{}"},
            "http_post: only http and https URLs are allowed, not 'ftp://x/'",
        ),
    ],
)
def test_bad_arguments_are_named(server_url: str, arguments: dict[str, Any], message: str) -> None:
    assert post_error(arguments) == message
    assert Handler.received == []
