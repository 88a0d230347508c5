"""A run's WebSocket opens only for a page of this site: its exact origin (scheme, host and
port) or one DJANGO_CSRF_TRUSTED_ORIGINS names. A page on another port or scheme of the same
host, or on a DNS name rebound to this machine, carried the owner's cookie and was let in."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client, override_settings

from agentsite.asgi import application
from planner_ui.models import Run

SITE = "127.0.0.1:8123"  # the Host header of the handshake: this site, as the browser reached it

FOREIGN = [
    "http://127.0.0.1:9999",  # another port of the same host
    "https://127.0.0.1:8123",  # another scheme, same host and port
    "https://localhost:4444",
    "http://localhost:8123",  # another host name of this machine: not the page's own origin
    "http://127.0.0.1",  # the default port, not 8123
    "http://evil.example:8123",
    "null",  # a sandboxed frame or a file
    "http://127.0.0.1:8123/runs/1/",  # not an origin
    "http://user@127.0.0.1:8123",
]


def _cookie(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


@database_sync_to_async
def _owner_with_run(make_user):
    alice = make_user("alice")
    return Run.objects.create(owner=alice, task="Research tea"), _cookie(alice)


async def _opens(run_id: int, headers: list[tuple[bytes, bytes]], scheme: str = "ws") -> bool:
    communicator = WebsocketCommunicator(application, f"/ws/runs/{run_id}/", headers=headers)
    communicator.scope["scheme"] = scheme
    connected, _ = await communicator.connect(timeout=5)
    await communicator.disconnect()
    return connected


def _headers(cookie: bytes, origin: str | None, host: str = SITE) -> list[tuple[bytes, bytes]]:
    headers = [(b"host", host.encode()), (b"cookie", cookie)]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return headers


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_only_the_pages_own_origin_opens_the_socket(make_user):
    run, cookie = await _owner_with_run(make_user)
    assert await _opens(run.pk, _headers(cookie, f"http://{SITE}"))
    opened = {origin: await _opens(run.pk, _headers(cookie, origin)) for origin in FOREIGN}
    assert opened == dict.fromkeys(FOREIGN, False)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_handshake_without_one_origin_or_with_a_foreign_host_is_refused(make_user):
    run, cookie = await _owner_with_run(make_user)
    assert not await _opens(run.pk, _headers(cookie, None))
    twice = [*_headers(cookie, f"http://{SITE}"), (b"origin", b"http://127.0.0.1:9999")]
    assert not await _opens(run.pk, twice)
    # DNS rebinding: the attacker's name resolves to this machine, so the page's origin and
    # the Host agree, but the name is not one of ALLOWED_HOSTS.
    rebound = "evil.example:8123"
    assert not await _opens(run.pk, _headers(cookie, f"http://{rebound}", host=rebound))
    assert not await _opens(run.pk, _headers(cookie, f"http://{SITE}", host=""))


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_over_tls_the_origin_is_https(make_user):
    run, cookie = await _owner_with_run(make_user)
    assert await _opens(run.pk, _headers(cookie, f"https://{SITE}"), scheme="wss")
    assert not await _opens(run.pk, _headers(cookie, f"http://{SITE}"), scheme="wss")


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_behind_a_tls_proxy_the_proxys_header_says_https(make_user):
    run, cookie = await _owner_with_run(make_user)
    proxied = [*_headers(cookie, "https://agents.example.com", host="agents.example.com")]
    with override_settings(
        ALLOWED_HOSTS=["agents.example.com"],
        SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"),
    ):
        assert await _opens(run.pk, [*proxied, (b"x-forwarded-proto", b"https")])
        assert not await _opens(run.pk, [*proxied, (b"x-forwarded-proto", b"http")])
    with override_settings(ALLOWED_HOSTS=["agents.example.com"]):
        # Without the setting the header means nothing: the connection was plain ws.
        assert not await _opens(run.pk, [*proxied, (b"x-forwarded-proto", b"https")])


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_trusted_origins_are_matched_exactly_or_by_subdomain(make_user):
    run, cookie = await _owner_with_run(make_user)
    trusted = ["https://agents.example.com", "https://*.tools.example.com:8443"]
    with override_settings(CSRF_TRUSTED_ORIGINS=trusted):
        for origin, expected in [
            ("https://agents.example.com", True),
            ("https://agents.example.com:443", True),
            ("http://agents.example.com", False),
            ("https://agents.example.com:8443", False),
            ("https://a.tools.example.com:8443", True),
            ("https://tools.example.com:8443", True),
            ("https://a.tools.example.com", False),
            ("https://eviltools.example.com:8443", False),
        ]:
            assert await _opens(run.pk, _headers(cookie, origin)) is expected, origin


# --- Daphne, as the browser meets it ------------------------------------------------------------


def _handshake(base_url: str, path: str, origin: str, cookie: bytes) -> str:
    """The status code Daphne answers a WebSocket handshake with."""
    parts = urlsplit(base_url)
    request = (
        (
            f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            f"Sec-WebSocket-Version: 13\r\nOrigin: {origin}\r\n"
        ).encode()
        + b"Cookie: "
        + cookie
        + b"\r\n\r\n"
    )
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        conn.sendall(request)
        return conn.recv(4096).split(b"\r\n", 1)[0].decode().split()[1]


@pytest.mark.stack
@pytest.mark.django_db(transaction=True)
def test_daphne_lets_in_the_pages_own_origin_only(daphne_url, make_user):
    alice = make_user("alice")
    run = Run.objects.create(owner=alice, task="Research tea")
    cookie = _cookie(alice)
    path = f"/ws/runs/{run.pk}/"
    port = urlsplit(daphne_url).port
    assert _handshake(daphne_url, path, daphne_url, cookie) == "101"
    for origin in ["http://127.0.0.1:9999", "https://localhost:4444", f"https://127.0.0.1:{port}"]:
        assert _handshake(daphne_url, path, origin, cookie) == "403", origin
