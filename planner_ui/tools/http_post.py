"""POST a body to a URL: it reaches a system outside the run, so its effect is SEND."""

from __future__ import annotations

import http.client
import json

from pydantic import BaseModel, Field

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ArgumentsInvalid, ToolError

from .base import Tool, ToolContext
from .netpolicy import check_url
from .outbound import REDIRECT_STATUSES, USER_AGENT, describe, open_connection, read_text


def is_json(content_type: str) -> bool:
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or media_type.endswith("+json")


class HttpPostInput(BaseModel):
    url: str = Field(max_length=2000, description="An http:// or https:// URL.")
    body: str = Field(description="The request body; valid JSON when content_type is JSON.")
    # A newline in a header value would let the model write headers of its own.
    content_type: str = Field(
        default="application/json", min_length=1, max_length=200, pattern=r"^[^\r\n]*$"
    )


class HttpPost(Tool):
    name = "http_post"
    description = (
        "POST a body to an http(s) URL and return the answer's status and text. Irreversible."
    )
    Input = HttpPostInput
    effect = Effect.SEND
    url_arguments = ("url",)

    def check(self, args: HttpPostInput) -> None:
        if is_json(args.content_type):
            try:
                json.loads(args.body)
            except ValueError as exc:
                said = (
                    f"http_post: the body is not valid JSON ({exc}); send JSON, or set "
                    "content_type to what the body is"
                )
                raise ArgumentsInvalid(said, {"body": said}) from exc

    def run(self, args: HttpPostInput, ctx: ToolContext) -> str:
        max_bytes = int(ctx.settings.get("post_max_bytes", 100_000))
        timeout = float(ctx.settings.get("post_timeout_s", 10.0))
        max_answer_bytes = int(ctx.settings.get("fetch_max_bytes", 200_000))
        data = args.body.encode("utf-8")
        if len(data) > max_bytes:
            raise ToolError(f"http_post: the body is {len(data)} bytes, over the {max_bytes} limit")
        target = check_url(args.url, ctx.settings.get("net_allow", ()), tool=self.name)
        headers = {"Content-Type": args.content_type, "User-Agent": USER_AGENT}
        if ctx.idempotency_key:
            headers["Idempotency-Key"] = ctx.idempotency_key
        connection = open_connection(target, timeout)
        try:
            try:
                connection.connect()
            except OSError as exc:
                raise ToolError(
                    f"http_post: could not connect to {args.url}: {describe(exc)}; nothing was sent"
                ) from exc
            try:
                connection.request("POST", target.request_target, body=data, headers=headers)
                response = connection.getresponse()
                status = f"HTTP {response.status} {response.reason}"
                location = response.getheader("Location")
                if response.status in REDIRECT_STATUSES and location:
                    # Following would send the body again, somewhere the caller did not choose.
                    status += f"\nLocation: {location} (not followed)"
                return f"{status}\n{read_text(response, max_answer_bytes)}"
            except (OSError, http.client.HTTPException) as exc:
                raise ToolError(
                    f"http_post: no usable answer from {args.url}: {describe(exc)}; "
                    "the server may have received the request"
                ) from exc
        finally:
            connection.close()
