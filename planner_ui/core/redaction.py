"""An address fit to show: a base URL an admin typed may carry credentials, in its userinfo
(`http://user:pass@host/v1`) or in its query (`?api_key=...`), and pages and error messages
reach people who must not read them."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

HIDDEN = "***"

# A query parameter whose name says it holds a secret: api_key, access_token, X-Auth, sig,
# password, client_secret, ... Values of any other parameter (a model name, a version) stay.
_SECRET_NAME = re.compile(
    r"key|token|secret|pass|pwd|auth|sig|credential|session|cookie|bearer", re.IGNORECASE
)
# For what urlsplit refuses (`http://[::1`): anything between "//" and the last "@" before the
# path, and the whole query, are dropped without parsing.
_USERINFO = re.compile(r"(//)[^/?#]*@")
_QUERY = re.compile(r"\?[^#]*")


def redact_url(url: str) -> str:
    """`url` with its userinfo and the values of secret-looking query parameters replaced by
    ***; everything else (scheme, host, port, path, other parameters) as it was."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return _QUERY.sub(f"?{HIDDEN}", _USERINFO.sub(rf"\1{HIDDEN}@", url))
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{HIDDEN}@{netloc.rpartition('@')[2]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_NAME.search(name) for name, _ in pairs):
            query = urlencode(
                [(name, HIDDEN if _SECRET_NAME.search(name) else value) for name, value in pairs],
                safe="*",
            )
    if netloc == parts.netloc and query == parts.query:
        return url  # as given: urlunsplit would also drop the "//" of unix:///path
    shown = urlunsplit(parts._replace(netloc=netloc, query=query))
    if not netloc and url.startswith(f"{parts.scheme}://"):
        shown = shown.replace(f"{parts.scheme}:", f"{parts.scheme}://", 1)
    return shown
