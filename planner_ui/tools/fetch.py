"""Fetch a URL over HTTP(S), with a size cap, a timeout and the net policy on every hop.

A GET changes nothing, but its URL can carry data out: the tool tells the gate which host a
call reaches, and refuses a redirect to a host the run does not allow."""

from __future__ import annotations

import http.client
from typing import Any
from urllib.parse import urljoin

from pydantic import BaseModel, Field

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ToolError
from planner_ui.core.hosts import Endpoint, host_allowed, host_entry, url_endpoint

from .base import Tool, ToolContext
from .netpolicy import check_url
from .outbound import REDIRECT_STATUSES, USER_AGENT, describe, open_connection, read_text

MAX_REDIRECTS = 5


class FetchUrlInput(BaseModel):
    url: str = Field(max_length=2000, description="An http:// or https:// URL.")


class FetchUrl(Tool):
    name = "fetch_url"
    description = "GET a web page or file and return its text (truncated to a size limit)."
    Input = FetchUrlInput
    effect = Effect.READ
    reaches_network = True
    url_arguments = ("url",)

    def reaches(self, arguments: Any) -> list[Endpoint]:
        url = arguments.get("url") if isinstance(arguments, dict) else None
        endpoint = url_endpoint(url) if isinstance(url, str) else None
        return [endpoint] if endpoint else []

    def run(self, args: FetchUrlInput, ctx: ToolContext) -> str:
        max_bytes = int(ctx.settings.get("fetch_max_bytes", 200_000))
        timeout = float(ctx.settings.get("fetch_timeout_s", 10.0))
        net_allow = ctx.settings.get("net_allow", ())
        url = args.url
        # Redirects are followed here, not by a library, so that each hop passes the net policy:
        # a public page must not be able to bounce the request to 127.0.0.1.
        for _hop in range(MAX_REDIRECTS + 1):
            target = check_url(url, net_allow, tool=self.name)
            _check_allowed(target.host, target.port, url, args.url, ctx.allowed_hosts)
            connection = open_connection(target, timeout)
            try:
                connection.request("GET", target.request_target, headers={"User-Agent": USER_AGENT})
                response = connection.getresponse()
                location = response.getheader("Location")
                if response.status in REDIRECT_STATUSES and location:
                    url = urljoin(url, location)
                    continue
                if not 200 <= response.status < 300:
                    raise ToolError(
                        f"fetch_url: {url} answered HTTP {response.status} {response.reason}"
                    )
                return f"HTTP {response.status} from {url}\n\n{read_text(response, max_bytes)}"
            except (OSError, http.client.HTTPException) as exc:
                raise ToolError(f"fetch_url: could not fetch {url}: {describe(exc)}") from exc
            finally:
                connection.close()
        raise ToolError(f"fetch_url: {args.url} redirected more than {MAX_REDIRECTS} times")


def _check_allowed(
    host: str, port: int, url: str, asked: str, allowed: tuple[str, ...] | None
) -> None:
    """Refuse a hop to a host the run does not allow. The gate asked a person before the first
    hop of such a call, so this refuses redirects (an allowed site may bounce the request, and
    its query, anywhere) and anything the gate's reading of the URL missed."""
    if allowed is None or host_allowed(allowed, (host, port)):
        return
    entry = host_entry(host, port)
    if url != asked:
        raise ToolError(
            f"fetch_url: {asked} redirected to {url}, on {entry}, a host this run does not "
            "allow; it was not fetched. Fetch that URL itself if you need it: a person will "
            "be asked."
        )
    raise ToolError(f"fetch_url: {url} is on {entry}, a host this run does not allow")
