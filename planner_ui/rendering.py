"""Model output is Markdown from an untrusted source: render it, then sanitize the HTML."""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

# Raw HTML in the Markdown is shown as text, and nh3 strips anything dangerous that remains.
_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def markdown_to_safe_html(text: str) -> str:
    return nh3.clean(
        _md.render(text or ""),
        link_rel="noopener noreferrer nofollow",
        url_schemes={"http", "https", "mailto"},
    )
