"""HTTP as fetch_url and http_post speak it: to checked addresses only, answers capped.

http.client rather than urllib, because urllib resolves the host name itself when it connects:
the address the net policy approved would not be the one used. It also means no proxy from
the environment is used, which is wanted: a proxy would connect where the policy never looked.
"""

from __future__ import annotations

import codecs
import http.client
import socket
import ssl

from .netpolicy import Target

USER_AGENT = "agentsite/0.1"
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def open_connection(target: Target, timeout: float) -> http.client.HTTPConnection:
    """A connection that speaks to `target.host` (Host header, TLS name) over a socket to one
    of `target.addresses`. Nothing is sent until a request is made."""
    if target.scheme == "https":
        return _PinnedHTTPSConnection(target, timeout)
    return _PinnedHTTPConnection(target, timeout)


def read_text(response: http.client.HTTPResponse, max_bytes: int) -> str:
    """The body decoded by its declared charset, cut at `max_bytes` with a note saying so."""
    body = response.read(max_bytes + 1)
    text = body[:max_bytes].decode(_charset(response.headers.get_content_charset()), "replace")
    return text + (f"\n[truncated at {max_bytes} bytes]" if len(body) > max_bytes else "")


def describe(exc: OSError | http.client.HTTPException) -> str:
    """A connection failure in a few words the model can act on."""
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"certificate verify failed: {exc.verify_message}"
    if isinstance(exc, http.client.HTTPException) and not isinstance(exc, http.client.InvalidURL):
        return f"the answer is not valid HTTP ({type(exc).__name__})"
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _charset(name: str | None) -> str:
    try:
        return codecs.lookup(name or "utf-8").name
    except LookupError:
        return "utf-8"


def _connect(target: Target, timeout: float | None) -> socket.socket:
    """A socket to the first checked address that answers, as create_connection would pick."""
    error: OSError = OSError(f"no address for {target.host}")
    for address in target.addresses:
        try:
            return socket.create_connection((address, target.port), timeout)
        except OSError as exc:
            error = exc
    raise error


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._target = target

    def connect(self) -> None:
        self.sock = _connect(self._target, self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(target.host, target.port, timeout=timeout, context=self._tls)
        self._target = target

    def connect(self) -> None:
        sock = _connect(self._target, self.timeout)
        try:
            # The socket goes to the checked address; SNI and the certificate check use the name.
            self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
