"""Which pages may open this site's WebSockets: the site's own origin, exactly, and the
origins DJANGO_CSRF_TRUSTED_ORIGINS names; the same rule Django's CSRF check applies to a
form's Origin header.

Channels' AllowedHostsOriginValidator compares host names only, so a page served by another
port or scheme of the same host (`http://127.0.0.1:9999`, `https://localhost:4444`) opened a
run's socket with its owner's cookie. Here the site's own origin is the scheme of the
connection (https behind a proxy that says so in SECURE_PROXY_SSL_HEADER, as for Django) with
the handshake's Host header, which must be one of ALLOWED_HOSTS: a page on a rebound DNS name
sends its own name as Host and is refused too. A handshake without an Origin is refused (a
browser always sends one; a script sends the site's)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import is_same_domain, split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int]


def _parse_origin(text: str) -> Origin | None:
    """(scheme, host, port) of a serialized origin (`scheme://host[:port]`), or None."""
    try:
        parts = urlsplit(text.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    if parts.username is not None or parts.query or parts.fragment:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return parts.scheme, host, port or DEFAULT_PORTS[parts.scheme]


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    values = [value for key, value in scope.get("headers", []) if key.lower() == name]
    if len(values) != 1:
        return None  # none, or several: no telling which one a browser meant
    try:
        return values[0].decode("ascii")
    except UnicodeDecodeError:
        return None


def _allowed_hosts() -> list[str]:
    # As Django's HttpRequest.get_host does.
    hosts = settings.ALLOWED_HOSTS
    if settings.DEBUG and not hosts:
        return [".localhost", "127.0.0.1", "[::1]"]
    return hosts


def _is_secure(scope: dict[str, Any]) -> bool:
    """As Django's HttpRequest.is_secure: the connection's scheme, or the proxy's header."""
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        name, secure_value = proxy
        meta_name = name.removeprefix("HTTP_").replace("_", "-").lower().encode()
        value = _header(scope, meta_name)
        if value is not None:
            return value.split(",", 1)[0].strip() == secure_value
    return scope.get("scheme") in ("wss", "https")


def own_origin(scope: dict[str, Any]) -> Origin | None:
    """The origin of the page this site served the handshake's Host from, or None when the
    Host is missing or not one of ALLOWED_HOSTS."""
    host = _header(scope, b"host")
    if not host:
        return None
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, _allowed_hosts()):
        return None
    return _parse_origin(f"{'https' if _is_secure(scope) else 'http'}://{host}")


def _trusted(origin: Origin) -> bool:
    """In CSRF_TRUSTED_ORIGINS: exactly, or under a `scheme://*.domain[:port]` entry (matched
    as Django's CSRF check does, on the host and port together)."""
    scheme, host, port = origin
    netloc = host if port == DEFAULT_PORTS[scheme] else f"{host}:{port}"
    for entry in settings.CSRF_TRUSTED_ORIGINS:
        entry = entry.lower()
        if "*" in entry:
            parts = urlsplit(entry)
            if parts.scheme == scheme and is_same_domain(netloc, parts.netloc.lstrip("*")):
                return True
        elif _parse_origin(entry) == origin:
            return True
    return False


def origin_allowed(scope: dict[str, Any]) -> bool:
    text = _header(scope, b"origin")
    origin = _parse_origin(text) if text else None
    if origin is None:
        return False
    return origin == own_origin(scope) or _trusted(origin)


class ExactOriginValidator:
    """ASGI middleware in front of the WebSocket routes: a handshake from any other origin is
    refused (HTTP 403) before a session or token is looked at."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
