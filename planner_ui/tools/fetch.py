"""Fetch a URL over HTTP(S), with a size cap and a timeout."""

from __future__ import annotations

import codecs
import http.client
import urllib.error
import urllib.request
from urllib.parse import urlparse

from pydantic import BaseModel, Field

from planner_ui.core.errors import ToolError

from .base import Tool, ToolContext


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects only to http(s), so a redirect cannot reach ftp:// or file://."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001
        if urlparse(newurl).scheme not in {"http", "https"}:
            raise urllib.error.HTTPError(newurl, code, f"redirect to {newurl} refused", headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_opener = urllib.request.build_opener(_HttpOnlyRedirects)


def _charset(name: str | None) -> str:
    try:
        return codecs.lookup(name or "utf-8").name
    except LookupError:
        return "utf-8"


class FetchUrlInput(BaseModel):
    url: str = Field(max_length=2000, description="An http:// or https:// URL.")


class FetchUrl(Tool):
    name = "fetch_url"
    description = "GET a web page or file and return its text (truncated to a size limit)."
    Input = FetchUrlInput

    def run(self, args: FetchUrlInput, ctx: ToolContext) -> str:
        if urlparse(args.url).scheme not in {"http", "https"}:
            raise ToolError(f"fetch_url: only http and https URLs are allowed, not {args.url!r}")
        max_bytes = int(ctx.settings.get("fetch_max_bytes", 200_000))
        timeout = float(ctx.settings.get("fetch_timeout_s", 10.0))
        request = urllib.request.Request(args.url, headers={"User-Agent": "agentsite/0.1"})
        try:
            with _opener.open(request, timeout=timeout) as response:
                body = response.read(max_bytes + 1)
                status = response.status
                charset = _charset(response.headers.get_content_charset())
        except urllib.error.HTTPError as exc:
            raise ToolError(f"fetch_url: {args.url} answered HTTP {exc.code} {exc.reason}") from exc
        except (urllib.error.URLError, http.client.HTTPException, ValueError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ToolError(f"fetch_url: could not fetch {args.url}: {reason}") from exc
        text = body[:max_bytes].decode(charset, errors="replace")
        note = f"\n[truncated at {max_bytes} bytes]" if len(body) > max_bytes else ""
        return f"HTTP {status} from {args.url}\n\n{text}{note}"
