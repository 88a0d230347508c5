"""Revoking an API token closes the WebSockets it opened, at once: before, a socket a script
opened with a token went on receiving the run's events after the token was revoked."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.urls import reverse

from agentsite.asgi import application
from planner_ui.consumers import CLOSE_NOT_LOGGED_IN
from planner_ui.models import Run
from planner_ui.services.events import event_append
from planner_ui.services.tokens import token_create, token_revoke

ORIGIN = [(b"origin", b"http://localhost"), (b"host", b"localhost")]


@database_sync_to_async
def _setup(make_user):
    alice = make_user("alice")
    run = Run.objects.create(owner=alice, task="Research tea")
    event_append(run.pk, "plan.invalid", {"attempt": 1, "errors": []})
    return (
        alice,
        run,
        token_create(user=alice, name="script"),
        token_create(user=alice, name="cron"),
    )


async def _open(path: str, raw: str) -> WebsocketCommunicator:
    headers = [*ORIGIN, (b"authorization", f"Bearer {raw}".encode())]
    ws = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await ws.connect(timeout=5)
    assert connected, code
    return ws


async def _until_replayed(ws: WebsocketCommunicator) -> None:
    while json.loads(await ws.receive_from(timeout=5))["type"] != "replay.done":
        pass


revoke = database_sync_to_async(token_revoke)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_revoking_a_token_closes_its_run_and_inbox_sockets_only(make_user):
    alice, run, (token, raw), (_other, other_raw) = await _setup(make_user)
    run_ws = await _open(f"/ws/runs/{run.pk}/", raw)
    await _until_replayed(run_ws)
    inbox_ws = await _open("/ws/inbox/", raw)
    assert json.loads(await inbox_ws.receive_from(timeout=5))["type"] == "approvals"
    other_ws = await _open(f"/ws/runs/{run.pk}/", other_raw)
    await _until_replayed(other_ws)

    await revoke(user=alice, token_id=token.pk)

    for ws in (run_ws, inbox_ws):
        assert await ws.receive_output(timeout=5) == {
            "type": "websocket.close",
            "code": CLOSE_NOT_LOGGED_IN,
        }
    # The user's other token goes on as before.
    await database_sync_to_async(event_append)(run.pk, "run.status", {"status": "running"})
    live = json.loads(await other_ws.receive_from(timeout=5))
    assert live["event"]["type"] == "run.status"
    await other_ws.disconnect()


# --- through Daphne, revoked from the tokens page ----------------------------------------------


def _frames(conn: socket.socket) -> tuple[list[str], int | None]:
    """The text frames a server sends until it closes, and its close code (no masking: server
    frames are unmasked)."""
    buffer = b""

    def take(n: int) -> bytes:
        nonlocal buffer
        while len(buffer) < n:
            chunk = conn.recv(65536)
            if not chunk:
                raise ConnectionError("closed without a close frame")
            buffer += chunk
        out, buffer = buffer[:n], buffer[n:]
        return out

    texts: list[str] = []
    while True:
        first, second = take(2)
        length = second & 0x7F
        if length == 126:
            length = int.from_bytes(take(2), "big")
        elif length == 127:
            length = int.from_bytes(take(8), "big")
        payload = take(length)
        opcode = first & 0x0F
        if opcode == 0x8:
            return texts, int.from_bytes(payload[:2], "big") if len(payload) >= 2 else None
        if opcode == 0x1:
            texts.append(payload.decode())


@pytest.mark.stack
@pytest.mark.django_db(transaction=True)
def test_revoking_on_the_tokens_page_closes_the_socket_daphne_serves(daphne_url, make_user):
    alice = make_user("alice")
    run = Run.objects.create(owner=alice, task="Research tea")
    event_append(run.pk, "plan.invalid", {"attempt": 1, "errors": []})
    token, raw = token_create(user=alice, name="script")
    parts = urlsplit(daphne_url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        conn.sendall(
            (
                f"GET /ws/runs/{run.pk}/ HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                f"Origin: {daphne_url}\r\nAuthorization: Bearer {raw}\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += conn.recv(1)
        assert head.split()[1] == b"101"
        page = Client()
        page.force_login(alice)
        answer = page.post(reverse("api_token_revoke", args=[token.pk]))
        assert answer.status_code == 302
        texts, code = _frames(conn)
    assert json.loads(texts[-1])["type"] == "replay.done"
    assert code == CLOSE_NOT_LOGGED_IN
